#pragma once
// Writing a synthetic model of any size to disk as a Hugging Face checkpoint or a GGUF file,
// tensor by tensor (the host holds one tensor, never the model): what bench_load needs to
// measure loading an 8B-parameter checkpoint on a machine that could not hold it in fp32.
// The project's writers (save_hf, GgufWriter) build the file in memory, which is right for test
// files and exports of small models and impossible here.

#include <cstdint>
#include <string>

#include "common/model.h"

namespace nanoserve::bench {

/// Writes `dir`/config.json and `dir`/model.safetensors (every tensor BF16) of the synthetic
/// model with `config` and `seed`; returns the bytes written.
std::int64_t write_hf_bf16(const ModelConfig& config, std::uint64_t seed, const std::string& dir);

/// Writes a GGUF v3 file (`llama` metadata, no vocabulary) of the synthetic model: matrices as
/// Q4_0 (ggml's reference quantizer; F16 when a row is not whole 32-element blocks), norms F32;
/// returns the bytes written.
std::int64_t write_gguf_q4_0(const ModelConfig& config, std::uint64_t seed,
                             const std::string& path);

}  // namespace nanoserve::bench
