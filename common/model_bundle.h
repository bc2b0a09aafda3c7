#pragma once
/// \file
/// \brief A model and its tokenizer, found and loaded together from what a user typed
/// (`--model`, `--tokenizer`). Every program uses this so that lookup rules are the same
/// everywhere (docs/design.md, "Models").

#include <memory>
#include <string>

#include "common/loaders/model_loader.h"
#include "common/model.h"
#include "common/tokenizer/tokenizer.h"

namespace nanoserve {

/// \brief A loaded model with the tokenizer that goes with it.
struct ModelBundle {
  Model model;                           ///< config + fp32 host weights
  std::unique_ptr<Tokenizer> tokenizer;  ///< never null after load_model_bundle
  ModelFormat format = ModelFormat::kSynthetic;  ///< where the weights came from
  std::string model_path;       ///< resolved file/directory ("" for synthetic)
  std::string tokenizer_path;   ///< resolved tokenizer file, "(embedded)" or "(bytes)"
};

/// \brief The embedded default: "stories260K.bin" when it can be found ($NANOSERVE_DATA,
/// data/models), otherwise "synthetic:tiny".
std::string default_model_spec();

/// \brief Loads `model_spec` (see `load_model`) and its tokenizer. With `tokenizer_spec` empty:
/// GGUF uses its embedded vocabulary, a Hugging Face directory its `tokenizer.json`, a
/// llama2.c `.bin` the first of `tok<vocab>.bin` / `tokenizer.bin` (when vocab is 32000) found
/// beside the model or in the data directories, and a synthetic model the `ByteTokenizer`.
/// Throws `LoadError` naming what was searched when no tokenizer is found, and when the
/// tokenizer's vocabulary does not fit the model's.
ModelBundle load_model_bundle(const std::string& model_spec, const std::string& tokenizer_spec = "",
                              uint64_t synthetic_seed = kDefaultSyntheticSeed);

}  // namespace nanoserve
