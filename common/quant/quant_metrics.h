#pragma once
/// \file
/// \brief How much a quantized model differs from its fp32 original: next-token KL divergence,
/// per-layer output error on calibration inputs, and the activation outlier statistics that
/// explain when AWQ can help, plus perplexity / bits-per-byte on the evaluation slice.

#include <string_view>
#include <vector>

#include "common/eval/perplexity.h"
#include "common/model.h"
#include "common/quant/awq.h"
#include "common/quant/calibration.h"
#include "common/quant/quantized_model.h"

namespace nanoserve::quant {

/// \brief Perplexity and bits-per-byte of `model` (e.g. `QuantizedModel::dequantize()`) through
/// the oracle on documents `range` of `text` (default: the evaluation slice 0..79).
eval::EvalResult evaluate_documents(const Model& model, const Tokenizer& tokenizer,
                                    std::string_view text,
                                    DocumentRange range = kEvaluationDocuments,
                                    const eval::EvalOptions& options = {});

/// \brief Mean over every position of every sequence of KL(p_ref ‖ p_cand) in nats, where p
/// is the softmax of each model's next-token logits (fp64). 0 for identical models; more
/// sensitive than perplexity, which averages over only the observed next tokens.
double mean_kl_divergence(const Model& reference, const Model& candidate,
                          const std::vector<std::vector<int>>& sequences);

/// \brief The output error of one linear of a candidate against the reference.
struct LayerError {
  int layer = 0;           ///< block
  LinearId linear{};       ///< which linear
  double error = 0;        ///< ‖W X − Ŵ X‖² summed over calibration rows
  double reference = 0;    ///< ‖W X‖², the scale to compare against
  /// \brief error / reference (0 when the reference output is zero).
  double relative() const { return reference > 0 ? error / reference : 0.0; }
};

/// \brief ‖W X − Ŵ X‖² of every linear, X the reference model's calibration inputs given by
/// `stats` (one BlockStats per block, from `collect_block_stats(reference, …)`). For AWQ pass
/// its per-block report: the candidate's linears then see inputs divided by the folded scales
/// (and wv, w3 produce outputs divided by them), which are undone before comparing.
std::vector<LayerError> layer_output_errors(const Model& reference, const Model& candidate,
                                            const std::vector<BlockStats>& stats,
                                            const std::vector<AwqLayerReport>* awq = nullptr);

/// \brief Mean of `relative()` over `errors`.
double mean_relative_error(const std::vector<LayerError>& errors);

/// \brief How uneven the magnitudes of one activation's channels are.
struct ActivationOutliers {
  int layer = 0;                  ///< block
  oracle::LinearInput input{};    ///< which activation
  double mean_ratio = 0;  ///< max_c mean|x_c| / mean_c mean|x_c|  (AWQ's saliency spread)
  double peak_ratio = 0;  ///< max_c max|x_c| / mean_c mean|x_c|   (single-token outliers)
};

/// \brief The outlier statistics of every input of every block in `stats`.
std::vector<ActivationOutliers> activation_outliers(const std::vector<BlockStats>& stats);

}  // namespace nanoserve::quant
