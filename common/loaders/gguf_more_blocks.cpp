#include "common/loaders/gguf_more_blocks.h"

#include <cstring>

#include "common/loaders/half_float.h"

namespace nanoserve {

namespace {

constexpr int kQ4_1Bytes = 20, kQ5_0Bytes = 22, kQ5_1Bytes = 24;
constexpr int kQ2_KBytes = 84, kQ3_KBytes = 110, kQ5_KBytes = 176, kQ6_KBytes = 210;

float fp16_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);  // blocks are not 2-byte aligned in general
  return fp16_to_fp32(h);
}

uint32_t u32_at(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;  // little-endian hosts only, as the rest of the loaders
}

/// The 6-bit scale and min of sub-block `j` (0..7) of a Q4_K / Q5_K super-block (ggml's
/// get_scale_min_k4).
void scale_min_k4(int j, const uint8_t* q, uint8_t& d, uint8_t& m) {
  if (j < 4) {
    d = q[j] & 63;
    m = q[j + 4] & 63;
  } else {
    d = uint8_t((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    m = uint8_t((q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4));
  }
}

}  // namespace

void decode_q4_1(const uint8_t* src, uint64_t n, float* dst) {
  for (uint64_t b = 0; b < n / 32; ++b) {
    const uint8_t* x = src + b * kQ4_1Bytes;
    const float d = fp16_at(x), m = fp16_at(x + 2);
    const uint8_t* qs = x + 4;
    float* y = dst + b * 32;
    for (int j = 0; j < 16; ++j) {
      const int x0 = qs[j] & 0x0F, x1 = qs[j] >> 4;
      y[j] = float(x0) * d + m;
      y[j + 16] = float(x1) * d + m;
    }
  }
}

void decode_q5_0(const uint8_t* src, uint64_t n, float* dst) {
  for (uint64_t b = 0; b < n / 32; ++b) {
    const uint8_t* x = src + b * kQ5_0Bytes;
    const float d = fp16_at(x);
    const uint32_t qh = u32_at(x + 2);
    const uint8_t* qs = x + 6;
    float* y = dst + b * 32;
    for (int j = 0; j < 16; ++j) {
      const uint8_t xh0 = uint8_t(((qh >> (j + 0)) << 4) & 0x10);
      const uint8_t xh1 = uint8_t((qh >> (j + 12)) & 0x10);
      const int32_t x0 = ((qs[j] & 0x0F) | xh0) - 16;
      const int32_t x1 = ((qs[j] >> 4) | xh1) - 16;
      y[j] = float(x0) * d;
      y[j + 16] = float(x1) * d;
    }
  }
}

void decode_q5_1(const uint8_t* src, uint64_t n, float* dst) {
  for (uint64_t b = 0; b < n / 32; ++b) {
    const uint8_t* x = src + b * kQ5_1Bytes;
    const float d = fp16_at(x), m = fp16_at(x + 2);
    const uint32_t qh = u32_at(x + 4);
    const uint8_t* qs = x + 8;
    float* y = dst + b * 32;
    for (int j = 0; j < 16; ++j) {
      const uint8_t xh0 = uint8_t(((qh >> (j + 0)) << 4) & 0x10);
      const uint8_t xh1 = uint8_t((qh >> (j + 12)) & 0x10);
      const int x0 = (qs[j] & 0x0F) | xh0, x1 = (qs[j] >> 4) | xh1;
      y[j] = float(x0) * d + m;
      y[j + 16] = float(x1) * d + m;
    }
  }
}

void decode_q2_k(const uint8_t* src, uint64_t n, float* dst) {
  for (uint64_t b = 0; b < n / 256; ++b) {
    const uint8_t* x = src + b * kQ2_KBytes;
    const uint8_t* scales = x;       // (16)
    const uint8_t* q = x + 16;       // (64)
    const float d = fp16_at(x + 80), min = fp16_at(x + 82);
    float* y = dst + b * 256;
    int is = 0;
    for (int half = 0; half < 2; ++half, q += 32) {
      for (int shift = 0; shift < 8; shift += 2) {
        for (int part = 0; part < 2; ++part) {  // bytes q[0..15], then q[16..31]
          const uint8_t sc = scales[is++];
          const float dl = d * float(sc & 0xF), ml = min * float(sc >> 4);
          for (int l = 0; l < 16; ++l) {
            *y++ = dl * float(int8_t((q[l + 16 * part] >> shift) & 3)) - ml;
          }
        }
      }
    }
  }
}

void decode_q3_k(const uint8_t* src, uint64_t n, float* dst) {
  constexpr uint32_t kmask1 = 0x03030303, kmask2 = 0x0f0f0f0f;
  for (uint64_t b = 0; b < n / 256; ++b) {
    const uint8_t* x = src + b * kQ3_KBytes;
    const uint8_t* hm = x;        // (32)
    const uint8_t* q = x + 32;    // (64)
    const float d_all = fp16_at(x + 108);
    // Unpack the 16 six-bit scales (ggml's aux[] shuffle), as signed bytes.
    uint32_t aux[4];
    std::memcpy(aux, x + 96, 12);
    const uint32_t tmp = aux[2];
    aux[2] = ((aux[0] >> 4) & kmask2) | (((tmp >> 4) & kmask1) << 4);
    aux[3] = ((aux[1] >> 4) & kmask2) | (((tmp >> 6) & kmask1) << 4);
    aux[0] = (aux[0] & kmask2) | (((tmp >> 0) & kmask1) << 4);
    aux[1] = (aux[1] & kmask2) | (((tmp >> 2) & kmask1) << 4);
    int8_t scales[16];
    std::memcpy(scales, aux, 16);
    float* y = dst + b * 256;
    int is = 0;
    uint8_t m = 1;
    for (int half = 0; half < 2; ++half, q += 32) {
      for (int shift = 0; shift < 8; shift += 2, m = uint8_t(m << 1)) {
        for (int part = 0; part < 2; ++part) {
          const float dl = d_all * float(scales[is++] - 32);
          for (int l = 0; l < 16; ++l) {
            const int o = l + 16 * part;
            *y++ = dl * float(int8_t((q[o] >> shift) & 3) - ((hm[o] & m) ? 0 : 4));
          }
        }
      }
    }
  }
}

void decode_q5_k(const uint8_t* src, uint64_t n, float* dst) {
  for (uint64_t b = 0; b < n / 256; ++b) {
    const uint8_t* x = src + b * kQ5_KBytes;
    const float d = fp16_at(x), min = fp16_at(x + 2);
    const uint8_t* scales = x + 4;  // (12)
    const uint8_t* qh = x + 16;     // (32)
    const uint8_t* ql = x + 48;     // (128)
    float* y = dst + b * 256;
    int is = 0;
    uint8_t u1 = 1, u2 = 2;
    for (int j = 0; j < 256; j += 64) {
      uint8_t sc, m;
      scale_min_k4(is + 0, scales, sc, m);
      const float d1 = d * float(sc), m1 = min * float(m);
      scale_min_k4(is + 1, scales, sc, m);
      const float d2 = d * float(sc), m2 = min * float(m);
      for (int l = 0; l < 32; ++l) *y++ = d1 * float((ql[l] & 0xF) + (qh[l] & u1 ? 16 : 0)) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * float((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
      ql += 32;
      is += 2;
      u1 = uint8_t(u1 << 2);
      u2 = uint8_t(u2 << 2);
    }
  }
}

void decode_q6_k(const uint8_t* src, uint64_t n, float* dst) {
  for (uint64_t b = 0; b < n / 256; ++b) {
    const uint8_t* x = src + b * kQ6_KBytes;
    const uint8_t* ql = x;                                      // (128)
    const uint8_t* qh = x + 128;                                // (64)
    const int8_t* sc = reinterpret_cast<const int8_t*>(x + 192);  // (16)
    const float d = fp16_at(x + 208);
    float* y = dst + b * 256;
    for (int n128 = 0; n128 < 2; ++n128) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int8_t q1 = int8_t(((ql[l + 0] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32);
        const int8_t q2 = int8_t(((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32);
        const int8_t q3 = int8_t(((ql[l + 0] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
        const int8_t q4 = int8_t(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
        y[l + 0] = d * float(sc[is + 0]) * float(q1);
        y[l + 32] = d * float(sc[is + 2]) * float(q2);
        y[l + 64] = d * float(sc[is + 4]) * float(q3);
        y[l + 96] = d * float(sc[is + 6]) * float(q4);
      }
      y += 128;
      ql += 64;
      qh += 32;
      sc += 8;
    }
  }
}

}  // namespace nanoserve
