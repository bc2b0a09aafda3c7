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
constexpr int kQ5_0Bytes = 2 + 4 + 16;        // fp16 d, uint32 qh, uint8 qs[16]

float read_fp16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);  // blocks are not 2-byte aligned in general
  return fp16_to_fp32(h);
}

void write_fp16(uint8_t* p, float x) {
  const uint16_t h = Eigen::numext::bit_cast<uint16_t>(Eigen::half(x));  // round to nearest even
  std::memcpy(p, &h, 2);
}

void check_whole_blocks(size_t n, const char* format, size_t block = kGgmlBlock32) {
  if (n % block != 0) {
    throw InvalidArgument(std::string("encode_") + format + ": " + std::to_string(n) +
                          " values are not a whole number of " + std::to_string(block) +
                          "-element blocks");
  }
}

/// ggml's `nearest_int`: round half to even (the default rounding mode).
int nearest_int(float x) { return int(std::nearbyint(x)); }

/// The element of largest magnitude of `x[0..n)`, sign kept (the first one on a tie), as
/// ggml's Q4_0/Q5_0 reference quantizers pick it.
float signed_absmax(const float* x, int n) {
  float amax = 0, max = 0;
  for (int j = 0; j < n; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
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

/// One 32-element sub-block of Q4_K fitted as x ≈ scale · L + offset, L ∈ [0, 15], offset ≤ 0:
/// ggml's `make_qkx2_quants` with Q4_K's parameters. Start from the min/max grid, then try 21
/// grids stretched by −1, −0.9, …, +1 steps; for each, the weighted least-squares scale and
/// offset of its codes (offset clamped to ≤ 0), kept when it lowers the weighted squared error.
/// As in ggml, a grid is laid over [offset, max] with the best offset found so far. Writes the
/// codes to `L`; returns the scale and sets `*neg_offset` = −offset ≥ 0.
float fit_q4_k_sub_block(const float* x, const float* w, uint8_t* L, float* neg_offset) {
  constexpr int kN = 32, kMax = 15, kSteps = 20;
  constexpr float kFirstStretch = -1.0f, kStretchStep = 0.1f;
  float lo = x[0], hi = x[0];
  float sum_w = w[0], sum_x = sum_w * x[0];
  for (int i = 1; i < kN; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
    sum_w += w[i];
    sum_x += w[i] * x[i];
  }
  lo = std::min(lo, 0.0f);  // the offset is never positive: a zero weight stays representable
  if (hi == lo) {
    std::fill(L, L + kN, uint8_t(0));
    *neg_offset = -lo;
    return 0.0f;
  }
  float inv = kMax / (hi - lo), scale = 1 / inv;
  float best = 0;
  for (int i = 0; i < kN; ++i) {
    L[i] = uint8_t(std::clamp(nearest_int(inv * (x[i] - lo)), 0, kMax));
    const float diff = scale * L[i] + lo - x[i];
    best += w[i] * (diff * diff);
  }
  uint8_t trial[kN];
  for (int step = 0; step <= kSteps; ++step) {
    inv = (kFirstStretch + kStretchStep * step + kMax) / (hi - lo);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < kN; ++i) {
      const int l = std::clamp(nearest_int(inv * (x[i] - lo)), 0, kMax);
      trial[i] = uint8_t(l);
      sum_l += w[i] * l;
      sum_l2 += w[i] * l * l;
      sum_xl += w[i] * l * x[i];
    }
    const float det = sum_w * sum_l2 - sum_l * sum_l;
    if (!(det > 0)) continue;
    float s = (sum_w * sum_xl - sum_x * sum_l) / det;
    float o = (sum_l2 * sum_x - sum_l * sum_xl) / det;
    if (o > 0) {  // clamp the offset to 0 and refit the scale alone
      o = 0;
      s = sum_xl / sum_l2;
    }
    float err = 0;
    for (int i = 0; i < kN; ++i) {
      const float diff = s * trial[i] + o - x[i];
      err += w[i] * (diff * diff);
    }
    if (err < best) {
      std::copy(trial, trial + kN, L);
      best = err;
      scale = s;
      lo = o;
    }
  }
  *neg_offset = -lo;
  return scale;
}

/// Packs the 6-bit scale `sc` and min `m` of sub-block `i` (0..7) into `scales` (zeroed
/// first), the inverse of `q4_k_scale_min`.
void q4_k_pack_scale_min(int i, int sc, int m, uint8_t* scales) {
  if (i < 4) {
    scales[i] = uint8_t(sc);
    scales[i + 4] = uint8_t(m);
  } else {  // low 4 bits in scales[i+4]; the top 2 above the 6 bits of scales[i-4] / scales[i]
    scales[i + 4] = uint8_t((sc & 0x0F) | ((m & 0x0F) << 4));
    scales[i - 4] |= uint8_t((sc >> 4) << 6);
    scales[i] |= uint8_t((m >> 4) << 6);
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
    const float d = signed_absmax(x, 32) / -8.0f;
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

std::vector<uint8_t> encode_q5_0(const std::vector<float>& values) {
  check_whole_blocks(values.size(), "q5_0");
  std::vector<uint8_t> out(values.size() / 32 * kQ5_0Bytes);
  for (size_t b = 0; b < values.size() / 32; ++b) {
    const float* x = values.data() + b * 32;
    uint8_t* block = out.data() + b * kQ5_0Bytes;
    const float d = signed_absmax(x, 32) / -16.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    write_fp16(block, d);
    uint32_t qh = 0;  // bit e: the fifth bit of element e
    for (int j = 0; j < 16; ++j) {
      // As Q4_0: x·id + 16.5 in [0.5, 32.5], truncated; 32 clamps to 31.
      const int lo = std::min(31, int(int8_t(x[j] * id + 16.5f)));
      const int hi = std::min(31, int(int8_t(x[j + 16] * id + 16.5f)));
      block[6 + j] = uint8_t((lo & 0x0F) | ((hi & 0x0F) << 4));
      qh |= uint32_t(lo >> 4) << j;
      qh |= uint32_t(hi >> 4) << (j + 16);
    }
    std::memcpy(block + 2, &qh, 4);
  }
  return out;
}

std::vector<uint8_t> encode_q4_k(const std::vector<float>& values) {
  check_whole_blocks(values.size(), "q4_k", kGgmlBlockK);
  std::vector<uint8_t> out(values.size() / kGgmlBlockK * kQ4_KBytes, 0);
  for (size_t b = 0; b < values.size() / kGgmlBlockK; ++b) {
    const float* x = values.data() + b * kGgmlBlockK;
    uint8_t* block = out.data() + b * kQ4_KBytes;
    uint8_t* scales = block + 4;  // (12)
    uint8_t* qs = block + 16;     // (128)
    uint8_t L[kGgmlBlockK];
    float sub_scale[8], sub_min[8], weight[32];
    float max_scale = 0, max_min = 0;  // both >= 0: the offset is subtracted as a min
    for (int i = 0; i < 8; ++i) {
      const float* xi = x + 32 * i;
      // ggml weights each element by the sub-block's RMS plus its own magnitude.
      float sum_x2 = 0;
      for (int l = 0; l < 32; ++l) sum_x2 += xi[l] * xi[l];
      const float rms = std::sqrt(sum_x2 / 32);
      for (int l = 0; l < 32; ++l) weight[l] = rms + std::fabs(xi[l]);
      sub_scale[i] = fit_q4_k_sub_block(xi, weight, L + 32 * i, &sub_min[i]);
      max_scale = std::max(max_scale, sub_scale[i]);
      max_min = std::max(max_min, sub_min[i]);
    }
    // Scales and mins as 6-bit multiples of d = max_scale/63 and dmin = max_min/63.
    const float inv_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f;
    const float inv_min = max_min > 0 ? 63.0f / max_min : 0.0f;
    for (int i = 0; i < 8; ++i) {
      q4_k_pack_scale_min(i, std::min(63, nearest_int(inv_scale * sub_scale[i])),
                          std::min(63, nearest_int(inv_min * sub_min[i])), scales);
    }
    write_fp16(block, max_scale / 63.0f);
    write_fp16(block + 2, max_min / 63.0f);
    // Requantize against the scales as stored (6-bit, fp16 d): what the decoder will use.
    const float d = read_fp16(block), dmin = read_fp16(block + 2);
    for (int i = 0; i < 8; ++i) {
      int sc = 0, m = 0;
      q4_k_scale_min(i, scales, sc, m);
      const float di = d * float(sc);
      if (di == 0.0f) continue;  // every code decodes to −dmin·m; keep the fitted ones
      const float mi = dmin * float(m);
      for (int l = 0; l < 32; ++l) {
        L[32 * i + l] = uint8_t(std::clamp(nearest_int((x[32 * i + l] + mi) / di), 0, 15));
      }
    }
    for (int k = 0; k < 4; ++k) {  // chunk k: sub-block 2k low nibbles, 2k+1 high nibbles
      for (int l = 0; l < 32; ++l) qs[32 * k + l] = uint8_t(L[64 * k + l] | (L[64 * k + 32 + l] << 4));
    }
  }
  return out;
}

}  // namespace nanoserve
