// libFuzzer target: GGUF files from arbitrary bytes — the container parser, the Llama model
// mapping, the embedded vocabulary, and what the device upload reads (each field's tensor
// looked up and shape-checked, its first and last rows decoded as ranges, a packed Q8_0 / Q4_0 /
// Q4_K tensor's byte count against its rows of blocks). Only nanoserve::Error may escape (see
// fuzz_llama2c_bin.cpp).
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/error.h"
#include "common/loaders/gguf_file.h"
#include "common/loaders/gguf_loader.h"
#include "common/loaders/gguf_reader.h"
#include "common/loaders/gguf_vocabulary.h"

namespace {
// The reads of GgufCheckpointReader / make_gguf_device_model, without a device.
void upload_path(const nanoserve::GgufFile& file) {
  const nanoserve::ModelConfig c = nanoserve::gguf_model_config(file);
  for (const char* field : {"token_embedding", "final_norm", "classifier"}) {
    if (std::string(field) == "classifier" && c.tied_classifier) continue;
    try {
      const nanoserve::GgufTensorInfo& t = nanoserve::gguf_field_tensor(file, c, field, -1);
      const std::size_t cols = t.dims[0];
      nanoserve::decode_gguf_range(file, t, 0, cols);
      nanoserve::decode_gguf_range(file, t, t.n_elements - cols, cols);
    } catch (const nanoserve::Error&) {
    }
  }
  for (int l = 0; l < c.n_layers && l < 4; ++l) {
    for (const char* field : {"wq", "wk", "wv", "wo", "w1", "w2", "w3", "attn_norm"}) {
      try {
        const nanoserve::GgufTensorInfo& t = nanoserve::gguf_field_tensor(file, c, field, l);
        const std::uint64_t rows = t.n_elements / t.dims[0];
        const std::uint64_t row_bytes = t.dims[0] / t.type->block_size * t.type->type_size;
        if (rows * row_bytes != t.n_bytes) __builtin_trap();  // the packed upload's size
        nanoserve::decode_gguf_range(file, t, 0, t.dims[0]);
      } catch (const nanoserve::Error&) {
      }
    }
  }
}
}  // namespace

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
    try {
      upload_path(file);
    } catch (const nanoserve::Error&) {
    }
  } catch (const nanoserve::Error&) {
  }
  return 0;
}
