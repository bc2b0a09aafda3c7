#pragma once
/// \file
/// \brief Quantizing a whole model: RTN, GPTQ or AWQ over every block's seven linears.
///
///     RTN   each linear on its own, no data.
///     GPTQ  block by block: run the model — whose earlier blocks are already quantized — on the
///           calibration sequences to get this block's input statistics, then GPTQ each linear
///           with its Hessian (the GPTQ reference's default). With `true_sequential` (AutoGPTQ's
///           default) the block is done in four steps, wq/wk/wv → wo → w1/w3 → w2, each fed by
///           inputs computed with the block's already-quantized linears; on stories260K and
///           TinyStories-656K (INT4 g128) that changed perplexity and KL by less than the noise
///           (±1%) for 4× the passes, so it is off by default.
///     AWQ   block by block on the fp32 model: statistics of this block's inputs, then scale
///           search + folding + clipping (awq.h); earlier blocks are already transformed (in
///           fp32, as the reference does), and at the end every linear is quantized with RTN.

#include <functional>
#include <string>
#include <vector>

#include "common/model.h"
#include "common/quant/awq.h"
#include "common/quant/gptq.h"
#include "common/quant/quantized_model.h"

namespace nanoserve::quant {

/// \brief What to quantize how.
struct QuantizeOptions {
  QuantMethod method = QuantMethod::kRtn;  ///< RTN, GPTQ or AWQ
  QuantScheme scheme;                      ///< bits, group size, symmetric
  GptqOptions gptq;                        ///< GPTQ's knobs
  bool true_sequential = false;            ///< GPTQ: re-collect inputs inside each block
  AwqOptions awq;                          ///< AWQ's knobs
  /// \brief Called with one line per finished block (may be empty).
  std::function<void(const std::string&)> progress;
};

/// \brief Per-block notes of a quantization run (for reports and tests).
struct QuantizeReport {
  std::vector<double> gptq_loss;          ///< GPTQ: Σ of the layers' loss estimates, per block
  std::vector<AwqLayerReport> awq;        ///< AWQ: chosen α and clipping, per block
  double seconds = 0;                     ///< wall time of the whole run
};

/// \brief Quantizes `model`'s linears with `options`. GPTQ and AWQ need `calibration`
/// sequences (`calibration_sequences`); RTN ignores them. Throws `InvalidArgument` for a bad
/// scheme, missing calibration data, or a failed factorization.
QuantizedModel quantize_model(const Model& model,
                              const std::vector<std::vector<int>>& calibration,
                              const QuantizeOptions& options, QuantizeReport* report = nullptr);

}  // namespace nanoserve::quant
