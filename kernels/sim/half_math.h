#pragma once
/// \file
/// \brief Host versions of the `__half` / `__nv_bfloat16` math that CUDA 13 declares device-only.
///
/// With g++ the CUDA 13 headers already give the host: conversions, `+ - * /`, comparisons,
/// `__hadd/__hsub/__hmul/__hdiv`, `__hmax/__hmin`, `__habs/__hneg`, `__hisnan` and their `…2`
/// forms. What they leave out, and this header supplies for `__half`, `__nv_bfloat16` and the
/// paired `__half2` / `__nv_bfloat162`:
/// - `__hfma` / `__hfma2`;
/// - `hexp hexp2 hexp10 hlog hlog2 hlog10 hsqrt hrsqrt hrcp hsin hcos htanh hfloor hceil htrunc
///   hrint` and the `h2…` forms;
/// - `__half2int_rn/rd/ru`, `__half2uint_rn`, `__half2short_rn`, `__half2ll_rn` and the
///   `__bfloat162…` equivalents.
///
/// Each is computed in fp32 (fp64 for the FMA) and rounded once to the storage type, so it is at
/// least as accurate as the GPU's version; kernel tests compare with tolerances anyway.
/// `__hfma` computes a·b + c exactly in double before the one rounding (a product of two 11-bit
/// significands is exact in double; the sum rounds at most once more, a negligible difference).
///
/// Tied to the CUDA major version whose headers were checked (13): a newer toolkit might declare
/// some of these for the host and collide with the definitions here.

#include <math.h>

#include "kernels/sim/builtins.h"

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

inline __half __hfma(const __half a, const __half b, const __half c) {
  return __double2half(fma(static_cast<double>(__half2float(a)),
                           static_cast<double>(__half2float(b)),
                           static_cast<double>(__half2float(c))));
}
inline __nv_bfloat16 __hfma(const __nv_bfloat16 a, const __nv_bfloat16 b, const __nv_bfloat16 c) {
  return __double2bfloat16(fma(static_cast<double>(__bfloat162float(a)),
                               static_cast<double>(__bfloat162float(b)),
                               static_cast<double>(__bfloat162float(c))));
}
inline __half2 __hfma2(const __half2 a, const __half2 b, const __half2 c) {
  return __halves2half2(__hfma(__low2half(a), __low2half(b), __low2half(c)),
                        __hfma(__high2half(a), __high2half(b), __high2half(c)));
}
inline __nv_bfloat162 __hfma2(const __nv_bfloat162 a, const __nv_bfloat162 b,
                              const __nv_bfloat162 c) {
  return __halves2bfloat162(__hfma(__low2bfloat16(a), __low2bfloat16(b), __low2bfloat16(c)),
                            __hfma(__high2bfloat16(a), __high2bfloat16(b), __high2bfloat16(c)));
}

#define NS_SIM_LOW_PRECISION_TO_INT(name, type, from, to_float, rounding) \
  inline type name(const from a) { return static_cast<type>(rounding(to_float(a))); }

NS_SIM_LOW_PRECISION_TO_INT(__half2int_rn, int, __half, __half2float, nearbyintf)
NS_SIM_LOW_PRECISION_TO_INT(__half2int_rd, int, __half, __half2float, floorf)
NS_SIM_LOW_PRECISION_TO_INT(__half2int_ru, int, __half, __half2float, ceilf)
NS_SIM_LOW_PRECISION_TO_INT(__half2uint_rn, unsigned, __half, __half2float, nearbyintf)
NS_SIM_LOW_PRECISION_TO_INT(__half2short_rn, short, __half, __half2float, nearbyintf)
NS_SIM_LOW_PRECISION_TO_INT(__half2ll_rn, long long, __half, __half2float, nearbyintf)
NS_SIM_LOW_PRECISION_TO_INT(__bfloat162int_rn, int, __nv_bfloat16, __bfloat162float, nearbyintf)
NS_SIM_LOW_PRECISION_TO_INT(__bfloat162int_rd, int, __nv_bfloat16, __bfloat162float, floorf)
NS_SIM_LOW_PRECISION_TO_INT(__bfloat162int_ru, int, __nv_bfloat16, __bfloat162float, ceilf)
NS_SIM_LOW_PRECISION_TO_INT(__bfloat162uint_rn, unsigned, __nv_bfloat16, __bfloat162float,
                            nearbyintf)
NS_SIM_LOW_PRECISION_TO_INT(__bfloat162short_rn, short, __nv_bfloat16, __bfloat162float, nearbyintf)
NS_SIM_LOW_PRECISION_TO_INT(__bfloat162ll_rn, long long, __nv_bfloat16, __bfloat162float,
                            nearbyintf)

#undef NS_SIM_LOW_PRECISION_TO_INT

/// \endcond
