#pragma once
/// \file
/// \brief The fast-math float intrinsics (`__expf`, `__fdividef`, `rsqrtf`, …) with the GPU's
/// error, not the host libm's: a tolerance tuned on the simulator then holds on hardware.
///
/// Two ingredients, both deterministic (same input, same result, in every run and schedule):
/// - **The hardware's formula.** The GPU computes these from its approximate base-2 units
///   (PTX `ex2.approx`, `lg2.approx`, `rcp.approx`, `sin.approx`), and the simulator follows the
///   same formula in fp32: `__expf(x)` is 2^(x·log2 e) with the product rounded to fp32 (the
///   source of the |x|-proportional part of its documented error), `__logf(x)` is
///   log2(x)·ln 2, `__powf(x, y)` is 2^(y·log2 x), `__sinf` reduces its argument in fp32 (so its
///   error grows with |x| as on the GPU), `__fdividef(x, y)` is x·(1/y) and returns 0 for
///   2^126 < |y| < 2^128, as documented.
/// - **The approximate unit's error.** The correctly rounded value of the base function is moved
///   by a pseudo-random whole number of ulps within the CUDA Math API's bound (chosen by a hash
///   of the input bits): ±2 ulp for `__expf`, `__exp10f`, `__fdividef`, `rsqrtf`; ±2 ulp
///   (or ±2^-22 absolute in [0.5, 2]) for `__log2f` and ±2^-21.41 absolute for `__sinf`/`__cosf`
///   in [-π, π]. A comparison tuned on the simulator therefore already allows the hardware's
///   worst case at about half the inputs, instead of the ~0.5 ulp of the host libm.
///
/// The correctly rounded intrinsics (`__fadd_rn`, `__frcp_rn`, `__fsqrt_rn`, …) are exact; see
/// kernels/sim/device_math.h.

#include <math.h>

#include <cstdint>
#include <cstring>

/// \cond NS_SIM_INTERNAL
namespace nanoserve::sim {

/// \brief A well-mixed hash of an input's bits (splitmix64 finalizer): picks the error offset.
inline std::uint64_t approx_hash(float x, float y = 0.0f) {
  std::uint32_t a;
  std::uint32_t b;
  std::memcpy(&a, &x, 4);
  std::memcpy(&b, &y, 4);
  std::uint64_t z = (static_cast<std::uint64_t>(a) << 32 | b) + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// \brief `value` moved by an offset in [-max_ulp, max_ulp] ulps chosen by `hash`.
inline float with_ulp_error(float value, std::uint64_t hash, int max_ulp) {
  if (!isfinite(value) || value == 0.0f) return value;
  int steps = static_cast<int>(hash % static_cast<std::uint64_t>(2 * max_ulp + 1)) - max_ulp;
  for (; steps > 0; --steps) value = nextafterf(value, HUGE_VALF);
  for (; steps < 0; ++steps) value = nextafterf(value, -HUGE_VALF);
  return value;
}

/// \brief `value` moved by an absolute error in [-bound, bound] chosen by `hash`.
inline float with_absolute_error(float value, std::uint64_t hash, float bound) {
  if (!isfinite(value)) return value;
  const float unit = static_cast<float>(hash % 2049u) / 1024.0f - 1.0f;  // in [-1, 1]
  return value + unit * bound;
}

/// \brief The GPU's base-2 exponential unit (`ex2.approx`, 2 ulp).
inline float approx_exp2(float x) { return with_ulp_error(exp2f(x), approx_hash(x), 2); }

/// \brief The GPU's base-2 logarithm unit (`lg2.approx`): 2^-22 absolute in [0.5, 2], else 2 ulp.
inline float approx_log2(float x) {
  if (x >= 0.5f && x <= 2.0f) {
    return with_absolute_error(log2f(x), approx_hash(x), 0x1p-22f);
  }
  return with_ulp_error(log2f(x), approx_hash(x), 2);
}

/// \brief Argument reduction to [-π, π] in fp32, as the approximate sine unit's error grows with
/// |x| outside that range.
inline float approx_reduce(float x) {
  const float turns = nearbyintf(x * 0.15915494f);  // x / 2π
  return fmaf(-turns, 6.28318548f, x);
}

}  // namespace nanoserve::sim
/// \endcond

/// @name Fast-math float intrinsics (the GPU's formula and error bound)
/// @{

/// \brief e^x = 2^(x·log2 e): 2 + 1.16·|x| ulp on a GPU.
inline float __expf(float x) { return nanoserve::sim::approx_exp2(x * 1.44269502f); }
/// \brief 10^x = 2^(x·log2 10).
inline float __exp10f(float x) { return nanoserve::sim::approx_exp2(x * 3.32192802f); }
/// \brief Base-2 logarithm (`lg2.approx`).
inline float __log2f(float x) { return nanoserve::sim::approx_log2(x); }
/// \brief Natural logarithm = log2(x)·ln 2.
inline float __logf(float x) { return nanoserve::sim::approx_log2(x) * 0.693147182f; }
/// \brief Base-10 logarithm = log2(x)·log10 2.
inline float __log10f(float x) { return nanoserve::sim::approx_log2(x) * 0.301029995f; }
/// \brief x^y = 2^(y·log2 x).
inline float __powf(float x, float y) {
  return nanoserve::sim::approx_exp2(y * nanoserve::sim::approx_log2(x));
}
/// \brief Sine (`sin.approx`: 2^-21.41 absolute in [-π, π], growing outside).
inline float __sinf(float x) {
  const float r = nanoserve::sim::approx_reduce(x);
  return nanoserve::sim::with_absolute_error(sinf(r), nanoserve::sim::approx_hash(x), 3.5888e-7f /* 2^-21.41 */);
}
/// \brief Cosine (`cos.approx`).
inline float __cosf(float x) {
  const float r = nanoserve::sim::approx_reduce(x);
  return nanoserve::sim::with_absolute_error(cosf(r), nanoserve::sim::approx_hash(x, 1.0f),
                                             3.5888e-7f /* 2^-21.41 */);
}
/// \brief Tangent = __sinf / __cosf.
inline float __tanf(float x) { return __sinf(x) / __cosf(x); }
/// \brief Sine and cosine at once.
inline void __sincosf(float x, float* s, float* c) {
  *s = __sinf(x);
  *c = __cosf(x);
}
/// \brief x / y = x·(1/y), 2 ulp; 0 when 2^126 < |y| < 2^128 (documented).
inline float __fdividef(float x, float y) {
  const float ay = fabsf(y);
  if (ay > 0x1p126f && ay < HUGE_VALF) return isfinite(x) ? 0.0f * x : NAN;
  return nanoserve::sim::with_ulp_error(x / y, nanoserve::sim::approx_hash(x, y), 2);
}
/// \brief x / y (same as `__fdividef`).
inline float fdividef(float x, float y) { return __fdividef(x, y); }
/// \brief 1 / sqrt(x), 2 ulp.
inline float rsqrtf(float x) {
  return nanoserve::sim::with_ulp_error(1.0f / sqrtf(x), nanoserve::sim::approx_hash(x), 2);
}

/// @}
