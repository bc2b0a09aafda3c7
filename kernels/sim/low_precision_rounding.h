#pragma once
/// \file
/// \brief Correct rounding to `__half` / `__nv_bfloat16` for the simulator's device-only
/// low-precision math: one rounding of an exact (or round-to-odd) value, in each of CUDA's four
/// rounding modes, with IEEE overflow and subnormal behaviour.
///
/// Used by kernels/sim/half_math.h for `__hfma` (which must round once), the integer conversions
/// CUDA declares device-only, and the int → bf16 conversions with directed rounding. The headers'
/// own host code already rounds `+ - * /` correctly: it computes in fp32 and rounds once more,
/// and fp32 has at least 2p + 2 bits for p = 11 (fp16) and p = 8 (bf16), so that second rounding
/// never changes a result (Figueroa, "When is double rounding innocuous?", 1995).
/// tests/kernels/test_low_precision_rounding.cpp checks all of them against an independent
/// reference.

#include <math.h>

#include <cstdint>
#include <cstring>
#include <limits>

#include "kernels/sim/builtins.h"

/// \cond NS_SIM_INTERNAL
namespace nanoserve::sim {

/// \brief CUDA's rounding modes: `_rn`, `_rz`, `_rd`, `_ru`.
enum class Rounding { kNearestEven, kTowardZero, kDown, kUp };

/// \brief A binary floating-point storage format.
struct LowFormat {
  int digits;         ///< significant bits including the implicit one (11 for fp16, 8 for bf16)
  int min_exponent;   ///< exponent of the smallest normal number (-14, -126)
  long double max_finite;  ///< largest finite value (65504, 0x1.fep127)
};

/// \brief IEEE binary16.
inline constexpr LowFormat kHalfFormat{11, -14, 65504.0L};
/// \brief bfloat16 (fp32's exponent range, 8 significant bits).
inline constexpr LowFormat kBf16Format{8, -126, 0x1.fep127L};

/// \brief Rounds `x` once to `format` in `mode`. `x` must be the exact value or its round-to-odd
/// approximation with at least digits + 2 bits (both round the same way). Returns the rounded
/// value, which the storage type represents exactly (±inf on overflow where IEEE says so).
inline long double round_to_format(long double x, const LowFormat& format, Rounding mode) {
  if (x == 0.0L || isnan(x) || isinf(x)) return x;
  const bool negative = x < 0.0L;
  const long double magnitude = negative ? -x : x;
  const int exponent = ilogbl(magnitude);
  const int quantum = (exponent < format.min_exponent ? format.min_exponent : exponent) -
                      (format.digits - 1);
  const long double scaled = ldexpl(magnitude, -quantum);  // exact: a power-of-two scaling
  long double whole = floorl(scaled);
  const long double fraction = scaled - whole;  // exact
  bool up = false;
  switch (mode) {
    case Rounding::kNearestEven:
      up = fraction > 0.5L || (fraction == 0.5L && fmodl(whole, 2.0L) != 0.0L);
      break;
    case Rounding::kTowardZero: up = false; break;
    case Rounding::kDown: up = negative && fraction != 0.0L; break;
    case Rounding::kUp: up = !negative && fraction != 0.0L; break;
  }
  if (up) whole += 1.0L;
  long double result = ldexpl(whole, quantum);
  if (result > format.max_finite) {
    const bool to_infinity = mode == Rounding::kNearestEven ||
                             (mode == Rounding::kUp && !negative) ||
                             (mode == Rounding::kDown && negative);
    result = to_infinity ? std::numeric_limits<long double>::infinity() : format.max_finite;
  }
  return negative ? -result : result;  // keeps the sign of a result that rounds to zero
}

/// \brief a·b + c in double with round-to-odd, so that one later rounding to a format of at most
/// 51 bits equals the correctly rounded fma (Boldo & Melquiond, "Emulation of FMA and correctly
/// rounded sums: proved algorithms using rounding to odd", 2008). Needs a·b exact in double,
/// which holds for fp16 and bf16 operands (at most 22 significant bits, exponents within range).
inline double fma_round_to_odd(double a, double b, double c) {
  const double product = a * b;  // exact
  const double sum = product + c;
  if (!isfinite(sum)) return sum;
  // TwoSum: sum + error == product + c exactly.
  const double b_virtual = sum - product;
  const double error = (product - (sum - b_virtual)) + (c - b_virtual);
  if (error == 0.0) return sum;
  std::uint64_t bits;
  std::memcpy(&bits, &sum, sizeof bits);
  if ((bits & 1u) != 0) return sum;  // already odd: the round-to-odd neighbour
  return nextafter(sum, error > 0.0 ? HUGE_VAL : -HUGE_VAL);
}

/// \brief A low-precision value converted to an integer type as the GPU's `cvt` does: rounded in
/// `mode`, NaN gives 0 (2^63 for 64-bit types, as the headers' `_rz` forms), out-of-range
/// values saturate to the type's limits.
template <typename Int>
Int saturating_to_int(float value, Rounding mode) {
  if (isnan(value)) return sizeof(Int) == 8 ? static_cast<Int>(1ull << 63) : Int{0};
  double rounded = value;
  switch (mode) {
    case Rounding::kNearestEven: {
      rounded = floor(rounded);
      const double fraction = static_cast<double>(value) - rounded;
      if (fraction > 0.5 || (fraction == 0.5 && fmod(rounded, 2.0) != 0.0)) rounded += 1.0;
      break;
    }
    case Rounding::kTowardZero: rounded = trunc(rounded); break;
    case Rounding::kDown: rounded = floor(rounded); break;
    case Rounding::kUp: rounded = ceil(rounded); break;
  }
  // Limits as long double: exact even for 64-bit types (2^63 and 2^64 - 1 are compared exactly).
  const long double lowest = static_cast<long double>(std::numeric_limits<Int>::lowest());
  const long double highest = static_cast<long double>(std::numeric_limits<Int>::max());
  if (static_cast<long double>(rounded) <= lowest) return std::numeric_limits<Int>::lowest();
  if (static_cast<long double>(rounded) >= highest) return std::numeric_limits<Int>::max();
  return static_cast<Int>(rounded);
}

/// \brief An integer rounded once to bf16 in `mode` (long double holds any 64-bit integer).
template <typename Int>
__nv_bfloat16 int_to_bf16(Int value, Rounding mode) {
  return __double2bfloat16(static_cast<double>(
      round_to_format(static_cast<long double>(value), kBf16Format, mode)));
}

}  // namespace nanoserve::sim
/// \endcond
