#include "common/engine/model/quantized_bundle.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "common/data_path.h"
#include "common/error.h"
#include "common/model_bundle.h"
#include "common/quant/quant_io.h"
#include "common/tokenizer/byte_tokenizer.h"
#include "common/tokenizer/load_tokenizer.h"

namespace nanoserve::engine {

namespace fs = std::filesystem;

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// The tokenizer named by `--tokenizer`: a tokenizer file, or a GGUF model's vocabulary.
std::unique_ptr<Tokenizer> named_tokenizer(const std::string& spec, int vocab, std::string& path) {
  if (ends_with(spec, ".gguf")) {
    ModelBundle b = load_model_bundle(spec);  // the GGUF loader's rules for its vocabulary
    path = b.model_path;
    return std::move(b.tokenizer);
  }
  const std::optional<std::string> found = find_data_file(spec);
  if (!found) throw LoadError(spec, "path", "tokenizer file not found");
  path = *found;
  return load_tokenizer(*found, vocab);
}

/// The tokenizer of the model the file was quantized from (`origin`, as recorded).
std::unique_ptr<Tokenizer> origin_tokenizer(const std::string& nsqm, const std::string& origin,
                                            int vocab, std::string& path) {
  if (origin.rfind("synthetic:", 0) == 0) {  // no need to generate its weights
    path = "(bytes)";
    return std::make_unique<ByteTokenizer>(vocab);
  }
  // As recorded (often an absolute path), then by file name in the data directories, so a file
  // quantized on another machine still finds its model.
  std::vector<std::string> candidates = {origin};
  const std::string file_name = fs::path(origin).filename().string();
  if (!file_name.empty() && file_name != origin) candidates.push_back(file_name);
  for (const std::string& spec : candidates) {
    if (spec.empty() || !find_data_file(spec)) continue;
    // Loads the fp32 model as well — the price of reusing load_model_bundle's tokenizer rules
    // (the models this project quantizes are small; pass --tokenizer to skip it).
    ModelBundle b = load_model_bundle(spec);
    if (b.model.config.vocab_size != vocab) {
      throw LoadError(nsqm, "tokenizer",
                      "the model it was quantized from, " + spec + ", has " +
                          std::to_string(b.model.config.vocab_size) + " tokens, the file " +
                          std::to_string(vocab) + "; pass --tokenizer");
    }
    path = b.tokenizer_path;
    return std::move(b.tokenizer);
  }
  throw LoadError(nsqm, "tokenizer",
                  "the model it was quantized from, '" + origin +
                      "', was not found (as given, nor by file name in $NANOSERVE_DATA or "
                      "data/models); pass --tokenizer");
}

}  // namespace

bool is_quantized_model_file(const std::string& spec, std::string* resolved) {
  if (spec.rfind("synthetic:", 0) == 0) return false;
  const std::optional<std::string> path = find_data_file(spec);
  std::error_code ec;
  if (!path || !fs::is_regular_file(*path, ec)) return false;
  std::ifstream in(*path, std::ios::binary);
  char magic[sizeof quant::kNsqmMagic] = {};
  if (!in.read(magic, sizeof magic) || std::memcmp(magic, quant::kNsqmMagic, sizeof magic) != 0) {
    return false;
  }
  if (resolved != nullptr) *resolved = *path;
  return true;
}

QuantizedBundle load_quantized_bundle(const std::string& spec, const std::string& tokenizer_spec) {
  QuantizedBundle b;
  if (!is_quantized_model_file(spec, &b.model_path)) {
    const std::optional<std::string> found = find_data_file(spec);
    if (!found) throw LoadError(spec, "path", "no such file (searched as given, $NANOSERVE_DATA, data/models)");
    throw LoadError(*found, "magic", "is not \"NSQM\": not a quantized model file");
  }
  b.model = quant::load_quantized_model(b.model_path);
  const int vocab = b.model.base.config.vocab_size;
  b.tokenizer = tokenizer_spec.empty()
                    ? origin_tokenizer(b.model_path, b.model.base.config.name, vocab, b.tokenizer_path)
                    : named_tokenizer(tokenizer_spec, vocab, b.tokenizer_path);
  if (b.tokenizer->vocab_size() > vocab) {
    throw LoadError(b.tokenizer_path, "vocab_size",
                    std::to_string(b.tokenizer->vocab_size()) + " tokens do not fit the model's " +
                        std::to_string(vocab));
  }
  return b;
}

}  // namespace nanoserve::engine
