#pragma once
/// \file
/// \brief Draft models made from the target itself. No two real models this small share a
/// tokenizer (../shared/data/README.md), so the chapter's drafts come from stories260K:
///
///  - **layer-truncated**: the first k blocks, then the target's own final RMSNorm and
///    classifier — an "early exit" draft (the idea behind LayerSkip, Elhoushi et al. 2024, and
///    self-speculative decoding, Zhang et al. 2024, minus their training). It costs about
///    k / n_layers of the target per token and shares its embedding.
///  - **quantized**: the target's INT8/INT4 copy (chapter 5's RTN, GPTQ or AWQ). Through the
///    oracle it runs dequantized, so it costs as much as the target here; on a GPU its W4A16 /
///    W8A16 kernels stream 1/8 or 1/4 of the linear bytes, which is where it pays.
///
/// Any other model with the target's vocabulary (e.g. stories15M for stories110M) is a draft
/// as it is.

#include <cstdint>
#include <string>
#include <vector>

#include "common/model.h"
#include "common/quant/quantize_model.h"

namespace nanoserve::speculative {

/// \brief A draft model and what it would stream per decode step.
struct DraftModel {
  Model model;               ///< fp32 weights the oracle runs (dequantized when quantized)
  int64_t weight_bytes = 0;  ///< bytes of its weights as stored (quantized linears packed)
  std::string label;         ///< e.g. "layers-2", "int4-g32-sym-gptq"
};

/// \brief `model` with only its first `k` blocks, keeping embedding, final norm and
/// classifier; `config.n_layers = k` and `config.name` gets a "-l<k>" suffix. Throws
/// `InvalidArgument` unless `1 <= k <= n_layers`.
Model first_layers(const Model& model, int k);

/// \brief `first_layers(target, k)` as a draft; bytes are its fp32 weights.
DraftModel layer_truncated_draft(const Model& target, int k);

/// \brief `quant::quantize_model(target, calibration, options).dequantize()` as a draft;
/// bytes are the quantized model's (`QuantizedModel::weight_bytes`). GPTQ and AWQ need
/// `calibration` sequences; RTN ignores them.
DraftModel quantized_draft(const Model& target, const std::vector<std::vector<int>>& calibration,
                           const quant::QuantizeOptions& options);

}  // namespace nanoserve::speculative
