// libFuzzer target: llama2.c tokenizer.bin parsing, then encoding and decoding with whatever
// vocabulary parsed. Only nanoserve::Error may escape; anything else (a crash, a sanitizer
// report, another exception) is a bug.

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/error.h"
#include "common/tokenizer/llama_tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    // 0: as many tokens as the file holds, so every well-formed prefix is explored.
    const auto tok = nanoserve::parse_llama2c_tokenizer(data, size, 0, "fuzz.bin");
    const std::string text(reinterpret_cast<const char*>(data), size < 256 ? size : 256);
    const std::string fixed = "Once upon a time, caf\xc3\xa9 \xf0\x9f\x98\x80";
    for (const std::string& t : {fixed, text}) {
      const std::vector<int> ids = tok->encode(t, true, true);
      (void)tok->decode(ids);
    }
    for (int id = 0; id < tok->vocab_size() && id < 300; ++id) (void)tok->decode_token(1, id);
  } catch (const nanoserve::Error&) {
    // Rejected with a message: the expected outcome for malformed input.
  }
  return 0;
}
