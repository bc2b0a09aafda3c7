#include "common/tokenizer/load_tokenizer.h"

#include "common/error.h"
#include "common/tokenizer/hf_bpe_tokenizer.h"
#include "common/tokenizer/llama_tokenizer.h"

namespace nanoserve {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::unique_ptr<Tokenizer> load_tokenizer(const std::string& path, int expected_vocab_size) {
  if (expected_vocab_size < 0) {
    throw InvalidArgument("expected_vocab_size " + std::to_string(expected_vocab_size) +
                          " for " + path + " must be ≥ 0 (0: no model to match)");
  }
  if (ends_with(path, ".gguf")) {
    throw LoadError(path, "format",
                    "a GGUF vocabulary is read with its model (make_gguf_llama_tokenizer)");
  }
  if (!ends_with(path, ".json")) return load_llama2c_tokenizer(path, expected_vocab_size);
  std::unique_ptr<HfBpeTokenizer> tok = load_hf_tokenizer(path, expected_vocab_size);
  if (expected_vocab_size > 0 && tok->vocab_size() > expected_vocab_size) {
    throw LoadError(path, "model.vocab",
                    std::to_string(tok->vocab_size()) + " tokens but the model has only " +
                        std::to_string(expected_vocab_size) + " embedding rows");
  }
  return tok;
}

}  // namespace nanoserve
