#pragma once
/// \file
/// \brief `load_model(spec)`: one entry point for every model source a user can name.
///
///     "synthetic:<name>"             -> make_synthetic_model (see synthetic_model.h)
///     otherwise resolve with find_data_file (as given, $NANOSERVE_DATA, data/models), then
///       a directory                  -> Hugging Face (config.json + model.safetensors)
///       *.safetensors or config.json -> Hugging Face, the file's directory
///       a file starting with "GGUF"  -> GGUF
///       any other file               -> llama2.c v0 .bin (the format has no magic)

#include <cstdint>
#include <string>

#include "common/loaders/synthetic_model.h"
#include "common/model.h"

namespace nanoserve {

/// \brief The checkpoint formats nanoserve reads.
enum class ModelFormat {
  kSynthetic,    ///< "synthetic:<name>": generated weights
  kLlama2c,      ///< llama2.c v0 `.bin`
  kGguf,         ///< GGUF v2/v3
  kHuggingFace,  ///< directory with config.json + model.safetensors
};

/// \brief "synthetic", "llama2.c", "gguf" or "huggingface".
const char* to_string(ModelFormat format);

/// \brief The format `load_model` would use for `spec`, and the resolved path (empty for
/// synthetic models). Throws `LoadError(spec, "path", …)` naming every place searched when
/// nothing is found.
ModelFormat detect_model_format(const std::string& spec, std::string* resolved_path);

/// \brief Loads the model named by `spec` (see the file comment); `synthetic_seed` seeds a
/// synthetic model. The result has passed `Model::validate()`.
Model load_model(const std::string& spec, uint64_t synthetic_seed = kDefaultSyntheticSeed);

}  // namespace nanoserve
