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
  /// \brief The Jinja chat template: `chat_template` of the HF directory's
  /// `tokenizer_config.json` or GGUF `tokenizer.chat_template`; "" when the model has none.
  std::string chat_template;
};

/// \brief A model's tokenizer and chat template without its weights (what
/// `nanoserve tokenize` needs, even for a checkpoint too big to load here).
struct TokenizerBundle {
  std::unique_ptr<Tokenizer> tokenizer;  ///< never null
  std::string tokenizer_path;            ///< resolved tokenizer, "(embedded)" or "(bytes)"
  std::string chat_template;             ///< as in `ModelBundle`
};

/// \brief The tokenizer `load_model_bundle(model_spec, tokenizer_spec)` would give, read
/// without the weights for GGUF files and HF directories (their vocabularies are bounded by
/// `kMaxHfVocab` instead of the model's rows); llama2.c and synthetic models are loaded whole
/// (their vocabulary size is in the checkpoint).
TokenizerBundle load_model_tokenizer(const std::string& model_spec,
                                     const std::string& tokenizer_spec = "");

/// \brief The `chat_template` of a `tokenizer_config.json`: the string, or the entry named
/// "default" of a list of `{name, template}`; "" when absent. Throws `LoadError` naming the
/// file and field when it is something else.
std::string read_chat_template(const std::string& tokenizer_config_path);

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
