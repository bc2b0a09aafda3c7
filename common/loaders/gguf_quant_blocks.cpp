#include "common/loaders/gguf_quant_blocks.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "common/error.h"
#include "common/loaders/half_float.h"

namespace nanoserve {

namespace {

constexpr int kQ8_0Bytes = 2 + 32;            // fp16 d, int8 q[32]
constexpr int kQ4_0Bytes = 2 + 16;            // fp16 d, uint8 qs[16]
constexpr int kQ4_KBytes = 2 + 2 + 12 + 128;  // fp16 d, fp16 dmin, scales[12], qs[128]

float read_fp16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);  // blocks are not 2-byte aligned in general
  return fp16_to_fp32(h);
}

void write_fp16(uint8_t* p, float x) {
  const uint16_t h = Eigen::numext::bit_cast<uint16_t>(Eigen::half(x));  // round to nearest even
  std::memcpy(p, &h, 2);
}

void check_whole_blocks(size_t n, const char* format) {
  if (n % kGgmlBlock32 != 0) {
    throw InvalidArgument(std::string("encode_") + format + ": " + std::to_string(n) +
                          " values are not a whole number of 32-element blocks");
  }
}

/// The 6-bit scale and min of sub-block `i` (0..7) of a Q4_K super-block.
void q4_k_scale_min(int i, const uint8_t* scales, int& sc, int& m) {
  if (i < 4) {
    sc = scales[i] & 63;
    m = scales[i + 4] & 63;
  } else {
    sc = (scales[i + 4] & 0x0F) | ((scales[i - 4] >> 6) << 4);
    m = (scales[i + 4] >> 4) | ((scales[i] >> 6) << 4);
  }
}

}  // namespace

void decode_q8_0(const uint8_t* src, uint64_t n, float* dst) {
  for (uint64_t b = 0; b < n / kGgmlBlock32; ++b) {
    const uint8_t* block = src + b * kQ8_0Bytes;
    const float d = read_fp16(block);
    for (int j = 0; j < 32; ++j) dst[b * 32 + j] = float(int8_t(block[2 + j])) * d;
  }
}

void decode_q4_0(const uint8_t* src, uint64_t n, float* dst) {
  for (uint64_t b = 0; b < n / kGgmlBlock32; ++b) {
    const uint8_t* block = src + b * kQ4_0Bytes;
    const float d = read_fp16(block);
    const uint8_t* qs = block + 2;
    for (int j = 0; j < 16; ++j) {
      dst[b * 32 + j] = float((qs[j] & 0x0F) - 8) * d;
      dst[b * 32 + j + 16] = float((qs[j] >> 4) - 8) * d;
    }
  }
}

void decode_q4_k(const uint8_t* src, uint64_t n, float* dst) {
  for (uint64_t b = 0; b < n / kGgmlBlockK; ++b) {
    const uint8_t* block = src + b * kQ4_KBytes;
    const float d = read_fp16(block);
    const float dmin = read_fp16(block + 2);
    const uint8_t* scales = block + 4;  // (12)
    const uint8_t* qs = block + 16;     // (128)
    float* y = dst + b * kGgmlBlockK;
    for (int k = 0; k < 4; ++k) {  // chunk k: sub-blocks 2k (low nibbles) and 2k+1 (high)
      int sc = 0, m = 0;
      q4_k_scale_min(2 * k, scales, sc, m);
      const float d1 = d * float(sc), m1 = dmin * float(m);
      q4_k_scale_min(2 * k + 1, scales, sc, m);
      const float d2 = d * float(sc), m2 = dmin * float(m);
      const uint8_t* q = qs + 32 * k;
      for (int l = 0; l < 32; ++l) y[64 * k + l] = d1 * float(q[l] & 0x0F) - m1;
      for (int l = 0; l < 32; ++l) y[64 * k + 32 + l] = d2 * float(q[l] >> 4) - m2;
    }
  }
}

std::vector<uint8_t> encode_q8_0(const std::vector<float>& values) {
  check_whole_blocks(values.size(), "q8_0");
  std::vector<uint8_t> out(values.size() / 32 * kQ8_0Bytes);
  for (size_t b = 0; b < values.size() / 32; ++b) {
    const float* x = values.data() + b * 32;
    uint8_t* block = out.data() + b * kQ8_0Bytes;
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::fmax(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    write_fp16(block, d);
    for (int j = 0; j < 32; ++j) block[2 + j] = uint8_t(int8_t(std::round(x[j] * id)));
  }
  return out;
}

std::vector<uint8_t> encode_q4_0(const std::vector<float>& values) {
  check_whole_blocks(values.size(), "q4_0");
  std::vector<uint8_t> out(values.size() / 32 * kQ4_0Bytes);
  for (size_t b = 0; b < values.size() / 32; ++b) {
    const float* x = values.data() + b * 32;
    uint8_t* block = out.data() + b * kQ4_0Bytes;
    float amax = 0, max = 0;  // max: the element of largest magnitude, sign kept
    for (int j = 0; j < 32; ++j) {
      if (amax < std::fabs(x[j])) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    write_fp16(block, d);
    for (int j = 0; j < 16; ++j) {
      // x·id + 8.5 is in [0.5, 16.5]: truncation rounds x·id + 8 half up; 16 clamps to 15.
      const int lo = std::min(15, int(int8_t(x[j] * id + 8.5f)));
      const int hi = std::min(15, int(int8_t(x[j + 16] * id + 8.5f)));
      block[2 + j] = uint8_t(lo | (hi << 4));
    }
  }
  return out;
}

}  // namespace nanoserve
