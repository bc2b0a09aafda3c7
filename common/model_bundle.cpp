#include "common/model_bundle.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/data_path.h"
#include "common/error.h"
#include "common/io/input_file.h"
#include "common/io/json_text.h"
#include "common/loaders/gguf_vocabulary.h"
#include "common/tokenizer/byte_tokenizer.h"
#include "common/tokenizer/hf_bpe_tokenizer.h"
#include "common/tokenizer/llama_tokenizer.h"
#include "common/tokenizer/load_tokenizer.h"

namespace nanoserve {

namespace fs = std::filesystem;

std::string default_model_spec() {
  return find_data_file("stories260K.bin") ? "stories260K.bin" : "synthetic:tiny";
}

namespace {

std::unique_ptr<Tokenizer> gguf_tokenizer(const std::string& path) {
  const GgufVocabulary vocab = load_gguf_vocabulary(path);
  if (vocab.model != "llama" && vocab.model != "gpt2") {
    throw LoadError(path, "tokenizer.ggml.model",
                    "'" + vocab.model + "' is not supported ('llama': SentencePiece, 'gpt2': "
                    "byte-level BPE); pass --tokenizer");
  }
  std::vector<int32_t> types;
  types.reserve(vocab.token_types.size());
  for (GgufTokenType t : vocab.token_types) types.push_back(static_cast<int32_t>(t));
  if (vocab.model == "gpt2") {
    return make_gguf_bpe_tokenizer(path, vocab.tokens, types, vocab.merges, vocab.pre,
                                   vocab.bos_id, vocab.eos_id);
  }
  return make_gguf_llama_tokenizer(path, vocab.tokens, vocab.scores, types, vocab.bos_id,
                                   vocab.eos_id, vocab.unk_id < 0 ? 0 : vocab.unk_id);
}

std::string gguf_chat_template(const std::string& path) {
  return load_gguf_vocabulary(path).chat_template;
}

// The chat template beside a tokenizer.json, if there is a tokenizer_config.json.
std::string chat_template_beside(const std::string& tokenizer_json) {
  const fs::path config = fs::path(tokenizer_json).parent_path() / "tokenizer_config.json";
  std::error_code ec;
  return fs::exists(config, ec) ? read_chat_template(config.string()) : std::string();
}

bool has_suffix(const std::string& s, const char* suffix) {
  const size_t n = std::char_traits<char>::length(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

// llama2.c checkpoints carry no vocabulary: look for the file its exporter would have written.
std::string find_llama2c_tokenizer(const std::string& model_path, int vocab_size) {
  std::vector<std::string> names = {"tok" + std::to_string(vocab_size) + ".bin"};
  if (vocab_size == 32000) names.push_back("tokenizer.bin");
  std::string searched;
  const fs::path dir = fs::path(model_path).parent_path();
  for (const std::string& name : names) {
    const fs::path beside = dir / name;
    std::error_code ec;
    if (fs::exists(beside, ec)) return beside.string();
    if (auto found = find_data_file(name)) return *found;
    searched += (searched.empty() ? "" : ", ") + name;
  }
  throw LoadError(model_path, "tokenizer",
                  "no tokenizer given and none of " + searched +
                      " found beside the model or in the data directories; pass --tokenizer");
}

}  // namespace

ModelBundle load_model_bundle(const std::string& model_spec, const std::string& tokenizer_spec,
                              uint64_t synthetic_seed) {
  ModelBundle b;
  b.format = detect_model_format(model_spec, &b.model_path);
  b.model = load_model(model_spec, synthetic_seed);
  const int vocab = b.model.config.vocab_size;

  if (!tokenizer_spec.empty()) {
    const std::optional<std::string> path = find_data_file(tokenizer_spec);
    if (!path) throw LoadError(tokenizer_spec, "path", "tokenizer file not found");
    b.tokenizer_path = *path;
    b.tokenizer = path->size() >= 5 && path->compare(path->size() - 5, 5, ".gguf") == 0
                      ? gguf_tokenizer(*path)
                      : load_tokenizer(*path, vocab);
  } else {
    switch (b.format) {
      case ModelFormat::kGguf:
        b.tokenizer = gguf_tokenizer(b.model_path);
        b.tokenizer_path = "(embedded)";
        break;
      case ModelFormat::kHuggingFace:
        b.tokenizer_path = (fs::path(b.model_path) / "tokenizer.json").string();
        b.tokenizer = load_tokenizer(b.tokenizer_path, vocab);
        break;
      case ModelFormat::kLlama2c:
        b.tokenizer_path = find_llama2c_tokenizer(b.model_path, vocab);
        b.tokenizer = load_tokenizer(b.tokenizer_path, vocab);
        break;
      case ModelFormat::kSynthetic:
        b.tokenizer = std::make_unique<ByteTokenizer>(vocab);
        b.tokenizer_path = "(bytes)";
        break;
    }
  }
  if (b.tokenizer_path == "(embedded)") {
    b.chat_template = gguf_chat_template(b.model_path);
  } else if (has_suffix(b.tokenizer_path, ".gguf")) {
    b.chat_template = gguf_chat_template(b.tokenizer_path);
  } else if (has_suffix(b.tokenizer_path, ".json")) {
    b.chat_template = chat_template_beside(b.tokenizer_path);
  }
  if (b.tokenizer->vocab_size() > vocab) {
    throw LoadError(b.tokenizer_path, "vocab_size",
                    std::to_string(b.tokenizer->vocab_size()) + " tokens do not fit the model's " +
                        std::to_string(vocab));
  }
  return b;
}

std::string read_chat_template(const std::string& path) {
  const std::string text = read_input_file(path, "tokenizer_config.json", 4ull << 20);
  const nlohmann::json j = parse_json_text(text, path);
  if (!j.is_object()) throw LoadError(path, "json", "the top level is not an object");
  const auto it = j.find("chat_template");
  if (it == j.end() || it->is_null()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_array()) {  // [{"name": "default", "template": "..."}, {"name": "tool_use", ...}]
    for (const auto& entry : *it) {
      if (entry.is_object() && entry.value("name", "") == "default" &&
          entry.contains("template") && entry["template"].is_string()) {
        return entry["template"].get<std::string>();
      }
    }
    throw LoadError(path, "chat_template", "a list without a {\"name\": \"default\"} template");
  }
  throw LoadError(path, "chat_template", "is neither a string nor a list of named templates");
}

TokenizerBundle load_model_tokenizer(const std::string& model_spec,
                                     const std::string& tokenizer_spec) {
  TokenizerBundle t;
  std::string path;
  if (!tokenizer_spec.empty() && (has_suffix(tokenizer_spec, ".json") || has_suffix(tokenizer_spec, ".gguf"))) {
    const std::optional<std::string> found = find_data_file(tokenizer_spec);
    if (!found) throw LoadError(tokenizer_spec, "path", "tokenizer file not found");
    t.tokenizer_path = *found;
    if (has_suffix(*found, ".gguf")) {
      t.tokenizer = gguf_tokenizer(*found);
      t.chat_template = gguf_chat_template(*found);
    } else {
      t.tokenizer = load_tokenizer(*found, 0);
      t.chat_template = chat_template_beside(*found);
    }
    return t;
  }
  const ModelFormat format = tokenizer_spec.empty() ? detect_model_format(model_spec, &path)
                                                    : ModelFormat::kSynthetic;
  if (format == ModelFormat::kGguf) {
    t.tokenizer = gguf_tokenizer(path);
    t.tokenizer_path = "(embedded)";
    t.chat_template = gguf_chat_template(path);
    return t;
  }
  if (format == ModelFormat::kHuggingFace) {
    t.tokenizer_path = (fs::path(path) / "tokenizer.json").string();
    t.tokenizer = load_tokenizer(t.tokenizer_path, 0);
    t.chat_template = chat_template_beside(t.tokenizer_path);
    return t;
  }
  ModelBundle b = load_model_bundle(model_spec, tokenizer_spec);
  t.tokenizer = std::move(b.tokenizer);
  t.tokenizer_path = b.tokenizer_path;
  t.chat_template = b.chat_template;
  return t;
}

}  // namespace nanoserve
