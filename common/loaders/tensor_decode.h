#pragma once
/// \file
/// \brief Turning stored tensor bytes into fp32 host weights: one decoder per storage type
/// (shared by the GGUF and safetensors loaders), a checked decode that names the tensor when a
/// value is not finite, and the matching encoders used by the writers.

#include <cstdint>
#include <string>
#include <vector>

namespace nanoserve {

/// \brief Decodes `n` elements at `src` (any alignment) into `dst` (n floats).
///
/// Quantized formats (GGUF Q8_0/Q4_0, added by the quantization chapter) plug in as further
/// functions of this shape: `n` is then a multiple of the block size.
using TensorDecoder = void (*)(const uint8_t* src, uint64_t n, float* dst);

/// \brief fp32 storage: a copy.
void decode_f32(const uint8_t* src, uint64_t n, float* dst);
/// \brief IEEE fp16 storage.
void decode_f16(const uint8_t* src, uint64_t n, float* dst);
/// \brief bfloat16 storage.
void decode_bf16(const uint8_t* src, uint64_t n, float* dst);

/// \brief fp32 values as fp32 bytes.
std::vector<uint8_t> encode_f32(const std::vector<float>& values);
/// \brief fp32 values as IEEE fp16 bytes, rounded to nearest even (as torch and numpy do).
std::vector<uint8_t> encode_f16(const std::vector<float>& values);
/// \brief fp32 values as bfloat16 bytes, rounded to nearest even.
std::vector<uint8_t> encode_bf16(const std::vector<float>& values);

/// \brief Decodes `n` elements with `decoder` into a new vector, then throws
/// `LoadError(file, tensor, "element i is NaN")` (or inf) if any value is not finite.
std::vector<float> decode_tensor(TensorDecoder decoder, const uint8_t* src, uint64_t n,
                                 const std::string& file, const std::string& tensor);

}  // namespace nanoserve
