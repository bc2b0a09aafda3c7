#include "common/model_bundle.h"

#include <filesystem>

#include "common/data_path.h"
#include "common/error.h"
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
  if (b.tokenizer->vocab_size() > vocab) {
    throw LoadError(b.tokenizer_path, "vocab_size",
                    std::to_string(b.tokenizer->vocab_size()) + " tokens do not fit the model's " +
                        std::to_string(vocab));
  }
  return b;
}

}  // namespace nanoserve
