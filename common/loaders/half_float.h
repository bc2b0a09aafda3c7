#pragma once
/// \file
/// \brief Exact fp16 / bf16 -> fp32 conversions (every 16-bit value has an exact fp32 twin).
///
///     fp16 (IEEE binary16):  s eeeee mmmmmmmmmm          bias 15, subnormals below 2^-14
///     bf16 (bfloat16):       s eeeeeeee mmmmmmm          the top 16 bits of an fp32
///     fp32 (binary32):       s eeeeeeee mmmmmmmmmmmmmmmmmmmmmmm   bias 127
///
/// Plain integer code without intrinsics, so the same functions compile for host and device.

#include <cstdint>
#include <cstring>

namespace nanoserve {

/// \brief Reinterprets 32 bits as an fp32.
inline float fp32_from_bits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

/// \brief The fp32 value of an IEEE fp16 bit pattern (subnormals, infinities and NaN payloads
/// included).
inline float fp16_to_fp32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1Fu;
  const uint32_t mantissa = h & 0x3FFu;
  if (exponent == 0x1F) return fp32_from_bits(sign | 0x7F800000u | (mantissa << 13));  // inf/NaN
  if (exponent != 0) {
    // Normal: rebias the exponent from 15 to 127 and widen the mantissa from 10 to 23 bits.
    return fp32_from_bits(sign | ((exponent + 112u) << 23) | (mantissa << 13));
  }
  // Zero or subnormal: mantissa * 2^-24, exact in fp32 (10 significant bits at most).
  const float magnitude = float(mantissa) * (1.0f / 16777216.0f);
  return sign != 0 ? -magnitude : magnitude;
}

/// \brief The fp32 value of a bfloat16 bit pattern (bf16 is fp32 with 16 mantissa bits cut).
inline float bf16_to_fp32(uint16_t b) { return fp32_from_bits(uint32_t(b) << 16); }

}  // namespace nanoserve
