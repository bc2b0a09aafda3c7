#pragma once
/// \file
/// \brief Host versions of CUDA's device-only math and bit intrinsics, for the simulator.
///
/// The fast-math intrinsics (`__expf`, `__fdividef`, …) live in kernels/sim/fast_math.h, which
/// reproduces the GPU's formulas and error bounds. g++ contracts `a * b + c` into an FMA only
/// in the FMA-contraction build (kernels/sim/README.md): compare kernel results with
/// tolerances, never bit for bit.

#include <math.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/sim/builtins.h"
#include "kernels/sim/fast_math.h"

/// @name Other float helpers
/// @{

/// \brief 1 / sqrt(x).
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
/// \brief Clamps to [0, 1] (NaN gives 0).
inline float __saturatef(float x) { return x > 0.0f ? (x < 1.0f ? x : 1.0f) : 0.0f; }

/// @}

/// @name Correctly rounded float operations (never contracted into an FMA)
/// @{

namespace nanoserve::sim {
/// \brief `value`, hidden from the optimizer, so that an FMA-contracting build (`-ffp-contract=fast`)
/// cannot fuse a `_rn` product or sum with its neighbours (nvcc never fuses them either).
inline float opaque(float value) {
#if defined(__x86_64__)
  __asm__("" : "+x"(value));
#else
  __asm__("" : "+m"(value));
#endif
  return value;
}
}  // namespace nanoserve::sim

/// \brief x + y.
inline float __fadd_rn(float x, float y) {
  return nanoserve::sim::opaque(x) + nanoserve::sim::opaque(y);
}
/// \brief x - y.
inline float __fsub_rn(float x, float y) {
  return nanoserve::sim::opaque(x) - nanoserve::sim::opaque(y);
}
/// \brief x * y.
inline float __fmul_rn(float x, float y) { return nanoserve::sim::opaque(x * y); }
/// \brief x / y.
inline float __fdiv_rn(float x, float y) { return x / y; }
/// \brief 1 / x.
inline float __frcp_rn(float x) { return 1.0f / x; }
/// \brief sqrt(x).
inline float __fsqrt_rn(float x) { return sqrtf(x); }
/// \brief x * y + z with a single rounding.
inline float __fmaf_rn(float x, float y, float z) { return fmaf(x, y, z); }
/// \brief x + y in double.
inline double __dadd_rn(double x, double y) { return x + y; }
/// \brief x * y in double.
inline double __dmul_rn(double x, double y) { return x * y; }
/// \brief x * y + z in double with a single rounding.
inline double __fma_rn(double x, double y, double z) { return fma(x, y, z); }

/// @}

/// @name Conversions and reinterpretations
/// @{

/// \brief float → int, round to nearest even.
inline int __float2int_rn(float x) { return static_cast<int>(nearbyintf(x)); }
/// \brief float → int, round toward zero.
inline int __float2int_rz(float x) { return static_cast<int>(x); }
/// \brief float → int, round down.
inline int __float2int_rd(float x) { return static_cast<int>(floorf(x)); }
/// \brief float → int, round up.
inline int __float2int_ru(float x) { return static_cast<int>(ceilf(x)); }
/// \brief float → unsigned, round to nearest even.
inline unsigned __float2uint_rn(float x) { return static_cast<unsigned>(nearbyintf(x)); }
/// \brief float → long long, round to nearest even.
inline long long __float2ll_rn(float x) { return static_cast<long long>(nearbyintf(x)); }
/// \brief int → float, round to nearest.
inline float __int2float_rn(int x) { return static_cast<float>(x); }
/// \brief unsigned → float, round to nearest.
inline float __uint2float_rn(unsigned x) { return static_cast<float>(x); }
/// \brief long long → float, round to nearest.
inline float __ll2float_rn(long long x) { return static_cast<float>(x); }
/// \brief The bits of a float as an int.
inline int __float_as_int(float x) {
  int r;
  std::memcpy(&r, &x, 4);
  return r;
}
/// \brief The bits of a float as an unsigned.
inline unsigned __float_as_uint(float x) {
  unsigned r;
  std::memcpy(&r, &x, 4);
  return r;
}
/// \brief An int's bits as a float.
inline float __int_as_float(int x) {
  float r;
  std::memcpy(&r, &x, 4);
  return r;
}
/// \brief An unsigned's bits as a float.
inline float __uint_as_float(unsigned x) {
  float r;
  std::memcpy(&r, &x, 4);
  return r;
}
/// \brief The bits of a double as a long long.
inline long long __double_as_longlong(double x) {
  long long r;
  std::memcpy(&r, &x, 8);
  return r;
}
/// \brief A long long's bits as a double.
inline double __longlong_as_double(long long x) {
  double r;
  std::memcpy(&r, &x, 8);
  return r;
}

/// @}

/// @name Integer intrinsics
/// @{

/// \brief Number of set bits.
inline int __popc(unsigned x) { return __builtin_popcount(x); }
/// \brief Number of set bits.
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
/// \brief Leading zero bits (32 for 0).
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(static_cast<unsigned>(x)); }
/// \brief Leading zero bits (64 for 0).
inline int __clzll(long long x) {
  return x == 0 ? 64 : __builtin_clzll(static_cast<unsigned long long>(x));
}
/// \brief 1-based position of the least significant set bit (0 for 0).
inline int __ffs(int x) { return __builtin_ffs(x); }
/// \brief 1-based position of the least significant set bit (0 for 0).
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
/// \brief Bit reversal.
inline unsigned __brev(unsigned x) {
  x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
  x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
  x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
  return __builtin_bswap32(x);
}
/// \brief High 32 bits of the 64-bit product.
inline unsigned __umulhi(unsigned x, unsigned y) {
  return static_cast<unsigned>((static_cast<std::uint64_t>(x) * y) >> 32);
}
/// \brief High 32 bits of the 64-bit signed product.
inline int __mulhi(int x, int y) {
  return static_cast<int>((static_cast<std::int64_t>(x) * y) >> 32);
}
/// \brief Product of the low 24 bits.
inline int __mul24(int x, int y) {
  // Sign-extend the low 24 bits without shifting a negative value left (undefined behaviour).
  const auto low24 = [](int v) { return static_cast<int>(static_cast<unsigned>(v) << 8) >> 8; };
  return static_cast<int>(static_cast<std::int64_t>(low24(x)) * low24(y));
}

/// @}

/// @name min / max as CUDA declares them in the global namespace
/// @{

/// \brief Smaller of two ints.
inline int min(int a, int b) { return a < b ? a : b; }
/// \brief Larger of two ints.
inline int max(int a, int b) { return a > b ? a : b; }
/// \brief Smaller of two unsigned ints.
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
/// \brief Larger of two unsigned ints.
inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
/// \brief Smaller of two 64-bit ints.
inline long long min(long long a, long long b) { return a < b ? a : b; }
/// \brief Larger of two 64-bit ints.
inline long long max(long long a, long long b) { return a > b ? a : b; }
/// \brief Smaller of two unsigned 64-bit ints.
inline unsigned long long min(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
/// \brief Larger of two unsigned 64-bit ints.
inline unsigned long long max(unsigned long long a, unsigned long long b) { return a > b ? a : b; }
/// \brief Smaller of two floats (`fminf`).
inline float min(float a, float b) { return fminf(a, b); }
/// \brief Larger of two floats (`fmaxf`).
inline float max(float a, float b) { return fmaxf(a, b); }
/// \brief Smaller of two doubles (`fmin`).
inline double min(double a, double b) { return fmin(a, b); }
/// \brief Larger of two doubles (`fmax`).
inline double max(double a, double b) { return fmax(a, b); }
/// \brief Mixed arithmetic types: compared in their common type, as CUDA's mixed overloads do.
template <typename A, typename B,
          typename = std::enable_if_t<std::is_arithmetic<A>::value &&
                                      std::is_arithmetic<B>::value && !std::is_same<A, B>::value>>
std::common_type_t<A, B> min(A a, B b) {
  return min(static_cast<std::common_type_t<A, B>>(a), static_cast<std::common_type_t<A, B>>(b));
}
/// \brief Mixed arithmetic types: compared in their common type.
template <typename A, typename B,
          typename = std::enable_if_t<std::is_arithmetic<A>::value &&
                                      std::is_arithmetic<B>::value && !std::is_same<A, B>::value>>
std::common_type_t<A, B> max(A a, B b) {
  return max(static_cast<std::common_type_t<A, B>>(a), static_cast<std::common_type_t<A, B>>(b));
}

/// @}

/// @name Cache-hinted loads and stores (plain memory accesses on the CPU)
/// @{

/// \brief Load through the read-only data cache.
template <typename T>
T __ldg(const T* address) {
  return *address;
}
/// \brief Load, cache streaming.
template <typename T>
T __ldcs(const T* address) {
  return *address;
}
/// \brief Load, cache at global level.
template <typename T>
T __ldcg(const T* address) {
  return *address;
}
/// \brief Load, last use.
template <typename T>
T __ldlu(const T* address) {
  return *address;
}
/// \brief Store, cache streaming.
template <typename T>
void __stcs(T* address, T value) {
  *address = value;
}
/// \brief Store, cache at global level.
template <typename T>
void __stcg(T* address, T value) {
  *address = value;
}
/// \brief Store, write-back.
template <typename T>
void __stwb(T* address, T value) {
  *address = value;
}

/// @}

namespace nanoserve::sim {
/// \brief Nanoseconds of a monotonic host clock (what `clock64()` returns in the simulator).
long long monotonic_ns();
}  // namespace nanoserve::sim

/// \brief A cycle counter; in the simulator, host nanoseconds.
inline long long clock64() { return nanoserve::sim::monotonic_ns(); }
/// \brief Sleep hint; nothing to wait for in the simulator.
inline void __nanosleep(unsigned) {}
