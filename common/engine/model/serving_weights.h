#pragma once
/// \file
/// \brief `ServingWeights`: the weights an engine serves with, as a `--quant` value names them
/// (chapter 7) — the model's own, chapter 5's weight-only INT8/INT4 quantization done at load,
/// or an NSQM file written by `nanoserve quantize`:
///
///     --quant none              the model as loaded, in the storage type (--dtype)
///     --quant int8-rtn          INT8 per channel, symmetric, round-to-nearest
///     --quant int4-rtn[-gN]     INT4 in groups of N columns (default 32), symmetric
///     --quant int4-gptq[-gN]    … fitted by GPTQ on calibration sequences
///     --quant int4-awq[-gN]     … by AWQ's activation-aware scales
///     --quant FILE.nsqm         a quantized file (its shape must be the model's)
///
/// Either way the engine gets one `DeviceModel`: quantized linears are `QuantizedDeviceLinear`s
/// (the W8A16/W4A16 kernels) behind the same `DeviceLinear` seam, so the scheduler, the
/// executor, speculative decoding and swapping run unchanged. Groups of 32 by default because
/// the small models here have rows 64–256 wide (128-wide groups would be whole rows); real
/// checkpoints use -g128.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/engine/model/device_model.h"
#include "common/model.h"
#include "common/quant/quantize_model.h"

namespace nanoserve::engine {

/// \brief A parsed `--quant` value.
///
/// \par Example
/// \snippet tests/ch07/test_examples_stack.cpp ServingWeights
struct WeightsSpec {
  /// \brief Where the weights come from.
  enum class Kind {
    kDense,     ///< the model's own weights
    kQuantize,  ///< quantized at load with `options`
    kFile,      ///< an NSQM file at `path`
  };
  std::string text;               ///< as given
  Kind kind = Kind::kDense;       ///< which
  quant::QuantizeOptions options;  ///< kQuantize: method and scheme
  std::string path;               ///< kFile: the file
  /// \brief Whether quantizing needs calibration sequences (GPTQ, AWQ).
  bool needs_calibration() const {
    return kind == Kind::kQuantize && options.method != quant::QuantMethod::kRtn;
  }
};

/// \brief Parses the forms of the file comment; a value ending in ".nsqm" is a file. Throws
/// `InvalidArgument` naming the value and the accepted forms.
WeightsSpec parse_weights_spec(const std::string& text);

/// \brief The weights on the device and what they stand for.
///
/// \par Example
/// \snippet tests/ch07/test_examples_stack.cpp ServingWeights
struct ServingWeights {
  std::unique_ptr<DeviceModel> device;  ///< what the kernels run
  /// \brief The fp32 model whose oracle forward the kernels compute (linears dequantized,
  /// exactly), for checks and perplexity.
  Model reference;
  std::int64_t weight_bytes = 0;  ///< device bytes of the weights (what a decode step streams)
  std::string label;              ///< e.g. "fp32", "int4-g32-sym-awq", "int4-g32-sym-gptq (x.nsqm)"
  bool quantized = false;         ///< linears are INT8/INT4
};

/// \brief The weights `spec` names for `model` (fp32 host weights), with everything but the
/// quantized linears stored in `dtype`. GPTQ and AWQ fit on `calibration`. Throws
/// `InvalidArgument` when GPTQ/AWQ get no calibration sequences, and `LoadError` for an NSQM
/// file that is unreadable or whose shape is not `model`'s.
ServingWeights load_serving_weights(const Model& model, const WeightsSpec& spec, DType dtype,
                                    const std::vector<std::vector<int>>& calibration = {});

}  // namespace nanoserve::engine
