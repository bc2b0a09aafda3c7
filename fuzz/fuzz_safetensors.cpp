// libFuzzer target: Hugging Face checkpoints from arbitrary bytes. The input is
// `config.json text, '\0', model.safetensors bytes` (JSON text never contains a NUL byte);
// without a NUL the whole input is the safetensors file and the config is a fixed small Llama.
// Only nanoserve::Error may escape (see fuzz_llama2c_bin.cpp).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "common/error.h"
#include "common/loaders/hf_loader.h"
#include "common/loaders/safetensors_file.h"

namespace {
const char* const kDefaultConfig = R"({"model_type": "llama", "hidden_size": 8,
  "intermediate_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2,
  "num_key_value_heads": 1, "vocab_size": 16, "max_position_embeddings": 8,
  "tie_word_embeddings": true})";
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const void* nul = std::memchr(data, 0, size);
  const size_t split = nul == nullptr ? 0 : size_t(static_cast<const uint8_t*>(nul) - data);
  const std::string config =
      nul == nullptr ? kDefaultConfig : std::string(reinterpret_cast<const char*>(data), split);
  const uint8_t* st = nul == nullptr ? data : data + split + 1;
  const size_t st_size = nul == nullptr ? size : size - split - 1;
  try {
    nanoserve::parse_safetensors(st, st_size, "fuzz.safetensors");
  } catch (const nanoserve::Error&) {
  }
  try {
    nanoserve::load_hf_from_memory(config, st, st_size, "fuzz");
  } catch (const nanoserve::Error&) {
  }
  return 0;
}
