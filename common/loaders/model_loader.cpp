#include "common/loaders/model_loader.h"

#include <cstring>
#include <filesystem>

#include "common/data_path.h"
#include "common/error.h"
#include "common/io/input_file.h"
#include "common/loaders/gguf_file.h"
#include "common/loaders/gguf_loader.h"
#include "common/loaders/hf_loader.h"
#include "common/loaders/llama2c_loader.h"

namespace nanoserve {

namespace {

constexpr const char* kSyntheticPrefix = "synthetic:";

// Opened as InputFile: a FIFO or device is refused here, before anything blocks on it.
bool starts_with_gguf_magic(const std::string& path) {
  const std::string magic = InputFile(path, "model file").read_prefix(4);
  return magic.size() == 4 && std::memcmp(magic.data(), kGgufMagic, 4) == 0;
}

std::string searched_places(const std::string& spec) {
  std::string places = "'" + spec + "' as given";
  if (!std::filesystem::path(spec).is_absolute()) {
    for (const std::string& dir : data_search_dirs()) places += ", " + dir + "/";
  }
  return places;
}

}  // namespace

const char* to_string(ModelFormat format) {
  switch (format) {
    case ModelFormat::kSynthetic: return "synthetic";
    case ModelFormat::kLlama2c: return "llama2.c";
    case ModelFormat::kGguf: return "gguf";
    case ModelFormat::kHuggingFace: return "huggingface";
  }
  return "unknown";
}

ModelFormat detect_model_format(const std::string& spec, std::string* resolved_path) {
  if (spec.rfind(kSyntheticPrefix, 0) == 0) {
    if (resolved_path != nullptr) resolved_path->clear();
    return ModelFormat::kSynthetic;
  }
  const std::optional<std::string> path = find_data_file(spec);
  if (!path) {
    std::string synthetic;
    for (const std::string& n : synthetic_model_names()) synthetic += " " + n;
    throw LoadError(spec, "path",
                    "no such file or directory; searched " + searched_places(spec) +
                        " (set NANOSERVE_DATA, or use a synthetic model:" + synthetic + ")");
  }
  if (resolved_path != nullptr) *resolved_path = *path;
  std::error_code ec;
  if (std::filesystem::is_directory(*path, ec)) return ModelFormat::kHuggingFace;
  // Pointing at a file of a Hugging Face checkpoint means its directory.
  const std::filesystem::path file(*path);
  if (file.extension() == ".safetensors" || file.filename() == "config.json") {
    if (resolved_path != nullptr) *resolved_path = file.parent_path().string();
    return ModelFormat::kHuggingFace;
  }
  return starts_with_gguf_magic(*path) ? ModelFormat::kGguf : ModelFormat::kLlama2c;
}

Model load_model(const std::string& spec, uint64_t synthetic_seed) {
  std::string path;
  switch (detect_model_format(spec, &path)) {
    case ModelFormat::kSynthetic: return make_synthetic_model(spec, synthetic_seed);
    case ModelFormat::kHuggingFace: return load_hf_model(path);
    case ModelFormat::kGguf: return load_gguf(path);
    case ModelFormat::kLlama2c: break;
  }
  try {
    return load_llama2c(path);
  } catch (const LoadError& e) {
    // The llama2.c format has no magic, so any unrecognized file ends up here; say so.
    throw LoadError(e.file(), e.field(),
                    std::string(e.what()).substr(e.file().size() + e.field().size() + 4) +
                        " (the file is not a directory and has no GGUF magic, so it was read as "
                        "a llama2.c v0 checkpoint)");
  }
}

}  // namespace nanoserve
