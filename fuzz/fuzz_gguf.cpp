// libFuzzer target: GGUF files from arbitrary bytes — the container parser, the Llama model
// mapping and the embedded vocabulary. Only nanoserve::Error may escape (see
// fuzz_llama2c_bin.cpp).
#include <cstddef>
#include <cstdint>

#include "common/error.h"
#include "common/loaders/gguf_file.h"
#include "common/loaders/gguf_loader.h"
#include "common/loaders/gguf_vocabulary.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const nanoserve::GgufFile file = nanoserve::parse_gguf(data, size, "fuzz.gguf");
    try {
      nanoserve::model_from_gguf(file);
    } catch (const nanoserve::Error&) {
    }
    try {
      nanoserve::gguf_vocabulary(file);
    } catch (const nanoserve::Error&) {
    }
  } catch (const nanoserve::Error&) {
  }
  return 0;
}
