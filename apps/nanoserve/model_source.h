#pragma once
// What `--model` names for `nanoserve generate` and `eval`: a checkpoint with fp32 weights, or
// a quantized model (an NSQM file written by `nanoserve quantize`), with its tokenizer — and the
// two ways to run it: the CPU oracle (on the dequantized weights for an NSQM file) and the
// kernels (the quantized linears themselves, through the same engine).

#include <memory>
#include <optional>
#include <string>

#include "common/engine/model/device_model.h"
#include "common/loaders/gguf_reader.h"
#include "common/loaders/hf_loader.h"
#include "common/model.h"
#include "common/quant/quantized_model.h"
#include "common/tokenizer/tokenizer.h"

namespace nanoserve::cli {

/// \brief A loaded `--model` with its tokenizer.
struct ModelSource {
  /// \brief The fp32 weights the CPU oracle runs: the checkpoint's, or an NSQM file's
  /// dequantized linears with its fp32 embedding, norms and classifier.
  Model model;
  std::optional<quant::QuantizedModel> quantized;  ///< set for an NSQM file
  std::unique_ptr<Tokenizer> tokenizer;            ///< never null
  std::string tokenizer_path;                      ///< resolved tokenizer, "(embedded)", "(bytes)"
  std::string description;  ///< e.g. "stories260K.bin" or "q.nsqm (gptq int4-g128-sym of …)"
  std::string chat_template;  ///< the model's Jinja chat template, "" when it has none
  /// \brief Set when the weights stay in the checkpoint until `to_device` streams them (a
  /// Hugging Face directory loaded for the device only): `model` then holds the config alone.
  std::shared_ptr<const HfCheckpointReader> streamed;
  /// \brief Set, likewise, for a GGUF file loaded for the device only: `to_device` uploads it
  /// with its Q8_0 / Q4_0 / Q4_K linears packed (engine/model/gguf_device_model.h).
  std::shared_ptr<const GgufCheckpointReader> gguf;

  /// \brief The weights on the device: dense in `dtype`, or the quantized linears with the rest
  /// (and the KV cache) in `dtype`.
  std::unique_ptr<engine::DeviceModel> to_device(DType dtype) const;
};

/// \brief Loads `model_spec` — an NSQM file (recognized by its magic bytes) or anything
/// `load_model_bundle` accepts — and its tokenizer (`tokenizer_spec`, or found from the model).
/// With `device_only` a Hugging Face directory or a GGUF file is only opened (`streamed`,
/// `gguf`): `to_device` then uploads its tensors range by range, and the host never holds an
/// fp32 copy of the model (docs/design.md, "What the loaders read": the measured peak memory).
ModelSource load_model_source(const std::string& model_spec, const std::string& tokenizer_spec,
                              bool device_only = false);

/// \brief The KV cache's storage type: `kv_dtype` parsed, or `activation` when it is empty
/// (`--kv-dtype` defaults to the activation type).
DType kv_dtype_or(const std::string& kv_dtype, DType activation);

/// \brief The device path's storage type: `dtype` parsed, or `engine::default_dtype()` (bf16 on
/// a GPU build, fp32 in the simulator) when it is empty (`--dtype` not given).
DType device_dtype_or_default(const std::string& dtype);

/// \brief Throws `InvalidArgument` when `--dtype` or `--kv-dtype` asks the CPU oracle (fp32
/// only) for anything but fp32.
void check_cpu_dtypes(const std::string& dtype, const std::string& kv_dtype);

}  // namespace nanoserve::cli
