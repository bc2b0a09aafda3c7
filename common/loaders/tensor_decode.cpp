#include "common/loaders/tensor_decode.h"

#include <Eigen/Core>
#include <cmath>
#include <cstring>

#include "common/error.h"
#include "common/loaders/half_float.h"

namespace nanoserve {

void decode_f32(const uint8_t* src, uint64_t n, float* dst) {
  if (n > 0) std::memcpy(dst, src, n * sizeof(float));
}

void decode_f16(const uint8_t* src, uint64_t n, float* dst) {
  for (uint64_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, src + 2 * i, 2);  // memcpy: the source need not be 2-byte aligned
    dst[i] = fp16_to_fp32(h);
  }
}

void decode_bf16(const uint8_t* src, uint64_t n, float* dst) {
  for (uint64_t i = 0; i < n; ++i) {
    uint16_t b;
    std::memcpy(&b, src + 2 * i, 2);
    dst[i] = bf16_to_fp32(b);
  }
}

std::vector<uint8_t> encode_f32(const std::vector<float>& values) {
  std::vector<uint8_t> out(values.size() * 4);
  if (!values.empty()) std::memcpy(out.data(), values.data(), out.size());
  return out;
}

namespace {
template <typename Half>
std::vector<uint8_t> encode_16bit(const std::vector<float>& values) {
  std::vector<uint8_t> out(values.size() * 2);
  for (size_t i = 0; i < values.size(); ++i) {
    const auto bits = Eigen::numext::bit_cast<uint16_t>(Half(values[i]));  // round to nearest even
    std::memcpy(&out[2 * i], &bits, 2);
  }
  return out;
}
}  // namespace

std::vector<uint8_t> encode_f16(const std::vector<float>& values) {
  return encode_16bit<Eigen::half>(values);
}

std::vector<uint8_t> encode_bf16(const std::vector<float>& values) {
  return encode_16bit<Eigen::bfloat16>(values);
}

std::vector<float> decode_tensor(TensorDecoder decoder, const uint8_t* src, uint64_t n,
                                 const std::string& file, const std::string& tensor) {
  std::vector<float> out(n);
  decoder(src, n, out.data());
  for (uint64_t i = 0; i < n; ++i) {
    if (!std::isfinite(out[i])) {
      throw LoadError(
          file, tensor,
          "element " + std::to_string(i) + " is " + (std::isnan(out[i]) ? "NaN" : "infinite"));
    }
  }
  return out;
}

}  // namespace nanoserve
