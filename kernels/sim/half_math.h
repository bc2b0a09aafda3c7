#pragma once
/// \file
/// \brief Host versions of the `__half` / `__nv_bfloat16` math that CUDA 13 declares device-only.
///
/// With g++ the CUDA 13 headers already give the host: conversions (every rounding mode),
/// `+ - * /`, comparisons, `__hadd/__hsub/__hmul/__hdiv`, `__hmax/__hmin`, `__habs/__hneg`,
/// `__hisnan`, the `…_rz` integer conversions and their `…2` forms; each rounds correctly (fp32
/// intermediates, see kernels/sim/low_precision_rounding.h). What they leave out, and this header
/// supplies for `__half`, `__nv_bfloat16` and the paired `__half2` / `__nv_bfloat162`:
/// - `__hfma`, `__hfma_relu`, `__hfma_sat` and the `…2` forms, rounded once (round-to-odd in
///   double, then one rounding: bit-exact with the hardware's fused operation);
/// - the integer conversions `__half2{int,uint,short,ushort,ll,ull}_{rn,rd,ru}` and the
///   `__bfloat162…` equivalents (saturating, NaN → 0, as `cvt` does);
/// - `__{int,uint,short,ushort,ll,ull}2bfloat16_{rz,rd,ru}`;
/// - `hexp hexp2 hexp10 hlog hlog2 hlog10 hsqrt hrsqrt hrcp hsin hcos htanh hfloor hceil htrunc
///   hrint` and the `h2…` forms: computed in fp32 and rounded once, so at least as accurate as
///   the GPU's approximations (exact for hfloor/hceil/htrunc/hrint/hsqrt).
///
/// Not provided: `__hcmadd`, `htanh_approx`.
///
/// Tied to the CUDA major version whose headers were checked (13): a newer toolkit might declare
/// some of these for the host and collide with the definitions here.

#include <math.h>

#include "kernels/sim/builtins.h"
#include "kernels/sim/low_precision_rounding.h"

#if CUDART_VERSION >= 14000
// Checked against CUDA 12/13 headers: re-check which functions a newer toolkit makes
// host-callable (they would collide with the definitions below), then raise this bound.
#error "kernels/sim/half_math.h: re-check the host-callable fp16/bf16 set for this CUDA"
#endif

/// \cond NS_SIM_INTERNAL

#define NS_SIM_LOW_PRECISION_UNARY(name, name2, expr)                             \
  inline __half name(const __half a) {                                            \
    const float x = __half2float(a);                                              \
    return __float2half_rn(expr);                                                 \
  }                                                                               \
  inline __nv_bfloat16 name(const __nv_bfloat16 a) {                              \
    const float x = __bfloat162float(a);                                          \
    return __float2bfloat16_rn(expr);                                             \
  }                                                                               \
  inline __half2 name2(const __half2 a) {                                         \
    return __halves2half2(name(__low2half(a)), name(__high2half(a)));             \
  }                                                                               \
  inline __nv_bfloat162 name2(const __nv_bfloat162 a) {                           \
    return __halves2bfloat162(name(__low2bfloat16(a)), name(__high2bfloat16(a))); \
  }

NS_SIM_LOW_PRECISION_UNARY(hexp, h2exp, expf(x))
NS_SIM_LOW_PRECISION_UNARY(hexp2, h2exp2, exp2f(x))
NS_SIM_LOW_PRECISION_UNARY(hexp10, h2exp10, powf(10.0f, x))
NS_SIM_LOW_PRECISION_UNARY(hlog, h2log, logf(x))
NS_SIM_LOW_PRECISION_UNARY(hlog2, h2log2, log2f(x))
NS_SIM_LOW_PRECISION_UNARY(hlog10, h2log10, log10f(x))
NS_SIM_LOW_PRECISION_UNARY(hsqrt, h2sqrt, sqrtf(x))
NS_SIM_LOW_PRECISION_UNARY(hrsqrt, h2rsqrt, 1.0f / sqrtf(x))
NS_SIM_LOW_PRECISION_UNARY(hrcp, h2rcp, 1.0f / x)
NS_SIM_LOW_PRECISION_UNARY(hsin, h2sin, sinf(x))
NS_SIM_LOW_PRECISION_UNARY(hcos, h2cos, cosf(x))
NS_SIM_LOW_PRECISION_UNARY(htanh, h2tanh, tanhf(x))
NS_SIM_LOW_PRECISION_UNARY(hfloor, h2floor, floorf(x))
NS_SIM_LOW_PRECISION_UNARY(hceil, h2ceil, ceilf(x))
NS_SIM_LOW_PRECISION_UNARY(htrunc, h2trunc, truncf(x))
NS_SIM_LOW_PRECISION_UNARY(hrint, h2rint, nearbyintf(x))

#undef NS_SIM_LOW_PRECISION_UNARY

#define NS_SIM_FMA(T, to_float, to_type, format)                                          \
  inline T __hfma(const T a, const T b, const T c) {                                       \
    const double odd = ::nanoserve::sim::fma_round_to_odd(to_float(a), to_float(b), to_float(c)); \
    return to_type(static_cast<double>(::nanoserve::sim::round_to_format(                  \
        odd, format, ::nanoserve::sim::Rounding::kNearestEven)));                          \
  }                                                                                        \
  inline T __hfma_relu(const T a, const T b, const T c) {                                  \
    const T r = __hfma(a, b, c);                                                           \
    return __hisnan(r) || to_float(r) >= 0.0f ? r : to_type(0.0);                          \
  }                                                                                        \
  inline T __hfma_sat(const T a, const T b, const T c) {                                   \
    const float r = to_float(__hfma(a, b, c));                                             \
    return to_type(r > 0.0f ? (r < 1.0f ? r : 1.0f) : 0.0f);                               \
  }

NS_SIM_FMA(__half, __half2float, __double2half, ::nanoserve::sim::kHalfFormat)
NS_SIM_FMA(__nv_bfloat16, __bfloat162float, __double2bfloat16, ::nanoserve::sim::kBf16Format)
#undef NS_SIM_FMA

#define NS_SIM_FMA2(T2, name, low, high, pair)                                      \
  inline T2 name##2(const T2 a, const T2 b, const T2 c) {                           \
    return pair(name(low(a), low(b), low(c)), name(high(a), high(b), high(c)));     \
  }
#define NS_SIM_FMA2_ALL(name)                                                              \
  NS_SIM_FMA2(__half2, name, __low2half, __high2half, __halves2half2)                     \
  NS_SIM_FMA2(__nv_bfloat162, name, __low2bfloat16, __high2bfloat16, __halves2bfloat162)
NS_SIM_FMA2_ALL(__hfma)
#undef NS_SIM_FMA2_ALL
#undef NS_SIM_FMA2

inline __half2 __hfma2_relu(const __half2 a, const __half2 b, const __half2 c) {
  return __halves2half2(__hfma_relu(__low2half(a), __low2half(b), __low2half(c)),
                        __hfma_relu(__high2half(a), __high2half(b), __high2half(c)));
}
inline __nv_bfloat162 __hfma2_relu(const __nv_bfloat162 a, const __nv_bfloat162 b,
                                   const __nv_bfloat162 c) {
  return __halves2bfloat162(
      __hfma_relu(__low2bfloat16(a), __low2bfloat16(b), __low2bfloat16(c)),
      __hfma_relu(__high2bfloat16(a), __high2bfloat16(b), __high2bfloat16(c)));
}
inline __half2 __hfma2_sat(const __half2 a, const __half2 b, const __half2 c) {
  return __halves2half2(__hfma_sat(__low2half(a), __low2half(b), __low2half(c)),
                        __hfma_sat(__high2half(a), __high2half(b), __high2half(c)));
}
inline __nv_bfloat162 __hfma2_sat(const __nv_bfloat162 a, const __nv_bfloat162 b,
                                  const __nv_bfloat162 c) {
  return __halves2bfloat162(
      __hfma_sat(__low2bfloat16(a), __low2bfloat16(b), __low2bfloat16(c)),
      __hfma_sat(__high2bfloat16(a), __high2bfloat16(b), __high2bfloat16(c)));
}

// Device-only conversions to integers: rounded in the named mode, NaN -> 0, saturating (cvt).
#define NS_SIM_TO_INT(name, type, from, to_float, mode)                                    \
  inline type name(const from a) {                                                         \
    return ::nanoserve::sim::saturating_to_int<type>(to_float(a),                          \
                                                     ::nanoserve::sim::Rounding::mode);    \
  }
#define NS_SIM_TO_INT_MODES(prefix, suffix, type, from, to_float)           \
  NS_SIM_TO_INT(prefix##suffix##_rn, type, from, to_float, kNearestEven)     \
  NS_SIM_TO_INT(prefix##suffix##_rd, type, from, to_float, kDown)            \
  NS_SIM_TO_INT(prefix##suffix##_ru, type, from, to_float, kUp)
#define NS_SIM_TO_INT_TYPES(prefix, from, to_float)                                  \
  NS_SIM_TO_INT_MODES(prefix, int, int, from, to_float)                               \
  NS_SIM_TO_INT_MODES(prefix, uint, unsigned, from, to_float)                         \
  NS_SIM_TO_INT_MODES(prefix, short, short, from, to_float)                           \
  NS_SIM_TO_INT_MODES(prefix, ushort, unsigned short, from, to_float)                 \
  NS_SIM_TO_INT_MODES(prefix, ll, long long, from, to_float)                          \
  NS_SIM_TO_INT_MODES(prefix, ull, unsigned long long, from, to_float)

NS_SIM_TO_INT_TYPES(__half2, __half, __half2float)
NS_SIM_TO_INT_TYPES(__bfloat162, __nv_bfloat16, __bfloat162float)

#undef NS_SIM_TO_INT_TYPES
#undef NS_SIM_TO_INT_MODES
#undef NS_SIM_TO_INT

// Device-only integer -> bf16 conversions with directed rounding (the _rn forms are host-callable).
#define NS_SIM_INT_TO_BF16(suffix, type)                                                       \
  inline __nv_bfloat16 __##suffix##2bfloat16_rz(const type i) {                                \
    return ::nanoserve::sim::int_to_bf16(i, ::nanoserve::sim::Rounding::kTowardZero);          \
  }                                                                                            \
  inline __nv_bfloat16 __##suffix##2bfloat16_rd(const type i) {                                \
    return ::nanoserve::sim::int_to_bf16(i, ::nanoserve::sim::Rounding::kDown);                \
  }                                                                                            \
  inline __nv_bfloat16 __##suffix##2bfloat16_ru(const type i) {                                \
    return ::nanoserve::sim::int_to_bf16(i, ::nanoserve::sim::Rounding::kUp);                  \
  }
NS_SIM_INT_TO_BF16(int, int)
NS_SIM_INT_TO_BF16(uint, unsigned)
NS_SIM_INT_TO_BF16(short, short)
NS_SIM_INT_TO_BF16(ushort, unsigned short)
NS_SIM_INT_TO_BF16(ll, long long)
NS_SIM_INT_TO_BF16(ull, unsigned long long)
#undef NS_SIM_INT_TO_BF16

/// \endcond
