// libFuzzer target: Hugging Face tokenizer.json parsing, then encoding and decoding with
// whatever configuration parsed. Only nanoserve::Error may escape.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/error.h"
#include "common/tokenizer/hf_bpe_tokenizer.h"

namespace {
// tokenizer_config.json naming the special tokens of the seed (tests/data/hf_tiny).
constexpr std::string_view kConfig = R"({"bos_token": "<s>", "eos_token": "</s>"})";
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  try {
    const auto tok = nanoserve::parse_hf_tokenizer(json, "fuzz.json", kConfig, "config.json");
    for (std::string_view t : {std::string_view("the abc \xc3\xa9\xc3\xaf <s> \xff"),
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
