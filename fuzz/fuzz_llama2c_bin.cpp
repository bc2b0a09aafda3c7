// libFuzzer target: llama2.c v0 checkpoints from arbitrary bytes.
// Only nanoserve::Error (LoadError, InvalidArgument) may escape the loader; anything else —
// a crash, a sanitizer report, std::bad_alloc, an uncaught std::exception — is a bug.
#include <cstddef>
#include <cstdint>

#include "common/error.h"
#include "common/loaders/llama2c_loader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    nanoserve::load_llama2c_from_memory(data, size, "fuzz.bin");
  } catch (const nanoserve::Error&) {
    // Rejected cleanly: the expected outcome for almost every input.
  }
  return 0;
}
