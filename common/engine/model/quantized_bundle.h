#pragma once
/// \file
/// \brief Loading a quantized model (an NSQM file, common/quant/quant_io.h) together with its
/// tokenizer, for the programs that accept `--model file.nsqm` (`nanoserve generate`/`eval`).
///
/// An NSQM file holds weights only. Its tokenizer is the one of the model it was quantized
/// from, whose name the file records (`ModelConfig::name`, e.g. "…/stories260K.bin"): that
/// model is looked up as every model is (`load_model_bundle`: the name as given, then its file
/// name in `$NANOSERVE_DATA` and data/models/), or `--tokenizer` names the tokenizer directly.

#include <memory>
#include <string>

#include "common/quant/quantized_model.h"
#include "common/tokenizer/tokenizer.h"

namespace nanoserve::engine {

/// \brief True when `spec` resolves (like a model path) to a file that starts with the NSQM
/// magic; the resolved path goes to `resolved` when given. Never throws for a missing file.
bool is_quantized_model_file(const std::string& spec, std::string* resolved = nullptr);

/// \brief A quantized model with the tokenizer that goes with it.
///
/// \par Example
/// \snippet tests/ch05/test_examples_quantized.cpp QuantizedBundle
struct QuantizedBundle {
  quant::QuantizedModel model;           ///< validated on load
  std::unique_ptr<Tokenizer> tokenizer;  ///< never null after load_quantized_bundle
  std::string model_path;                ///< the resolved NSQM file
  std::string tokenizer_path;            ///< the tokenizer file, or "(embedded)"/"(bytes)"
};

/// \brief Loads the NSQM file `spec` and its tokenizer: `tokenizer_spec` when not empty (a
/// tokenizer file, or a GGUF file whose vocabulary to use), otherwise the tokenizer of the
/// model recorded in the file. Throws `LoadError` for a bad file, a tokenizer that cannot be
/// found (naming what was searched and suggesting `--tokenizer`), or a vocabulary that does
/// not fit the model's.
QuantizedBundle load_quantized_bundle(const std::string& spec, const std::string& tokenizer_spec = "");

}  // namespace nanoserve::engine
