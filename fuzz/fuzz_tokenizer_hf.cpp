// libFuzzer target: Hugging Face tokenizer.json parsing, then encoding and decoding with
// whatever configuration parsed (seeds: tiny_tokenizer.json, and family_*.json, copies of
// tests/data/tokenizers/*/tokenizer.json). Only nanoserve::Error may escape.

#include <cstddef>
#include <cstdint>
#include <string>
#include <memory>
#include <string_view>

#include "common/error.h"
#include "common/tokenizer/hf_bpe_tokenizer.h"

namespace {
// tokenizer_config.json naming the special tokens of the seeds: tests/data/hf_tiny (and the
// TinyLlama-style family), then the byte-level families of tests/data/tokenizers/.
constexpr std::string_view kConfigs[] = {
    R"({"bos_token": "<s>", "eos_token": "</s>"})",
    R"({"bos_token": null, "eos_token": "<|endoftext|>"})",
    R"({"bos_token": "<|begin_of_text|>", "eos_token": "<|end_of_text|>"})",
};

std::unique_ptr<nanoserve::HfBpeTokenizer> parse(std::string_view json) {
  for (std::string_view config : kConfigs) {
    try {
      return nanoserve::parse_hf_tokenizer(json, "fuzz.json", config, "config.json");
    } catch (const nanoserve::LoadError& e) {
      if (e.file() != "config.json") throw;  // the tokenizer itself is bad
    }
  }
  return nullptr;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  try {
    const auto tok = parse(json);
    if (!tok) return 0;
    for (std::string_view t : {std::string_view("the abc \xc3\xa9\xc3\xaf <s> \xff 123 日本 's\n\n  x"),
                               std::string_view("<|im_start|>user\ne\xcc\x81<|im_end|><|endoftext|>"),
                               json.substr(0, 256)}) {
      const std::vector<int> ids = tok->encode(t, true, true);
      (void)tok->decode(ids);
      for (size_t k = 1; k < ids.size(); ++k) (void)tok->decode_token(ids[k - 1], ids[k]);
    }
  } catch (const nanoserve::Error&) {
    // Rejected with a message: the expected outcome for malformed input.
  }
  return 0;
}
