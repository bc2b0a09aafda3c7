#pragma once
/// \file
/// \brief CUDA atomics for the simulator.
///
/// Simulated threads of one block are cooperative fibers and never interleave inside an atomic,
/// but blocks may run on several OS threads (`NANOSERVE_SIM_THREADS`), so every atomic is a real
/// CPU atomic (GCC `__atomic` builtins, relaxed order like CUDA's). 16-bit floating types use a
/// compare-and-swap on their raw bits. Float sums across OS threads are therefore as
/// order-dependent as on a GPU: compare them with a tolerance.

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/sim/builtins.h"

namespace nanoserve::sim {

/// \brief Atomically replaces `*address` by `op(*address)` (any type of 1–8 bytes with a
/// same-sized unsigned integer image); returns the old value.
template <typename T, typename Op>
T atomic_update(T* address, Op op) {
  using Bits = std::conditional_t<sizeof(T) == 2, std::uint16_t,
                                  std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>>;
  static_assert(sizeof(T) == sizeof(Bits), "atomic_update: unsupported size");
  Bits* word = reinterpret_cast<Bits*>(address);
  Bits expected = __atomic_load_n(word, __ATOMIC_RELAXED);
  for (;;) {
    T old;
    std::memcpy(static_cast<void*>(&old), &expected, sizeof(T));
    const T updated = op(old);
    Bits desired;
    std::memcpy(&desired, static_cast<const void*>(&updated), sizeof(T));
    if (__atomic_compare_exchange_n(word, &expected, desired, false, __ATOMIC_RELAXED,
                                    __ATOMIC_RELAXED)) {
      return old;
    }
  }
}

}  // namespace nanoserve::sim

/// @name Integer atomics (return the old value)
/// @{

/// \brief `*address += val`.
inline int atomicAdd(int* address, int val) {
  return __atomic_fetch_add(address, val, __ATOMIC_RELAXED);
}
/// \brief `*address += val`.
inline unsigned atomicAdd(unsigned* address, unsigned val) {
  return __atomic_fetch_add(address, val, __ATOMIC_RELAXED);
}
/// \brief `*address += val`.
inline unsigned long long atomicAdd(unsigned long long* address, unsigned long long val) {
  return __atomic_fetch_add(address, val, __ATOMIC_RELAXED);
}
/// \brief `*address -= val`.
inline int atomicSub(int* address, int val) {
  return __atomic_fetch_sub(address, val, __ATOMIC_RELAXED);
}
/// \brief `*address -= val`.
inline unsigned atomicSub(unsigned* address, unsigned val) {
  return __atomic_fetch_sub(address, val, __ATOMIC_RELAXED);
}
/// \brief `*address = max(*address, val)`.
inline int atomicMax(int* address, int val) {
  return nanoserve::sim::atomic_update(address, [val](int old) { return old > val ? old : val; });
}
/// \brief `*address = max(*address, val)`.
inline unsigned atomicMax(unsigned* address, unsigned val) {
  return nanoserve::sim::atomic_update(address,
                                       [val](unsigned old) { return old > val ? old : val; });
}
/// \brief `*address = max(*address, val)`.
inline long long atomicMax(long long* address, long long val) {
  return nanoserve::sim::atomic_update(address,
                                       [val](long long old) { return old > val ? old : val; });
}
/// \brief `*address = max(*address, val)`.
inline unsigned long long atomicMax(unsigned long long* address, unsigned long long val) {
  return nanoserve::sim::atomic_update(
      address, [val](unsigned long long old) { return old > val ? old : val; });
}
/// \brief `*address = min(*address, val)`.
inline int atomicMin(int* address, int val) {
  return nanoserve::sim::atomic_update(address, [val](int old) { return old < val ? old : val; });
}
/// \brief `*address = min(*address, val)`.
inline unsigned atomicMin(unsigned* address, unsigned val) {
  return nanoserve::sim::atomic_update(address,
                                       [val](unsigned old) { return old < val ? old : val; });
}
/// \brief `*address = min(*address, val)`.
inline long long atomicMin(long long* address, long long val) {
  return nanoserve::sim::atomic_update(address,
                                       [val](long long old) { return old < val ? old : val; });
}
/// \brief `*address = min(*address, val)`.
inline unsigned long long atomicMin(unsigned long long* address, unsigned long long val) {
  return nanoserve::sim::atomic_update(
      address, [val](unsigned long long old) { return old < val ? old : val; });
}
/// \brief `*address = (*address >= val) ? 0 : *address + 1`.
inline unsigned atomicInc(unsigned* address, unsigned val) {
  return nanoserve::sim::atomic_update(address,
                                       [val](unsigned old) { return old >= val ? 0u : old + 1; });
}
/// \brief `*address = (*address == 0 || *address > val) ? val : *address - 1`.
inline unsigned atomicDec(unsigned* address, unsigned val) {
  return nanoserve::sim::atomic_update(
      address, [val](unsigned old) { return (old == 0 || old > val) ? val : old - 1; });
}
/// @}

namespace nanoserve::sim {

/// \brief T, for the integer types of CUDA's bitwise and exchange atomics (int, unsigned,
/// unsigned long long), in a context where T is not deduced: the value converts to the pointee
/// type, as it does with CUDA's overloads.
template <typename T>
using IntAtomicValue =
    std::enable_if_t<std::is_same_v<T, int> || std::is_same_v<T, unsigned> ||
                         std::is_same_v<T, unsigned long long>,
                     T>;

/// @name Bitwise and exchange atomics of int, unsigned, unsigned long long (return the old value)
/// @{

/// \brief `*a &= v`.
template <typename T>
T atomicAnd(T* a, IntAtomicValue<T> v) { return __atomic_fetch_and(a, v, __ATOMIC_RELAXED); }
/// \brief `*a |= v`.
template <typename T>
T atomicOr(T* a, IntAtomicValue<T> v) { return __atomic_fetch_or(a, v, __ATOMIC_RELAXED); }
/// \brief `*a ^= v`.
template <typename T>
T atomicXor(T* a, IntAtomicValue<T> v) { return __atomic_fetch_xor(a, v, __ATOMIC_RELAXED); }
/// \brief `*a = v`.
template <typename T>
T atomicExch(T* a, IntAtomicValue<T> v) { return __atomic_exchange_n(a, v, __ATOMIC_RELAXED); }

/// @}

}  // namespace nanoserve::sim

// CUDA declares its atomics in the global namespace.
using nanoserve::sim::atomicAnd;
using nanoserve::sim::atomicExch;
using nanoserve::sim::atomicOr;
using nanoserve::sim::atomicXor;

/// @name Compare-and-swap: `*address = (*address == compare) ? val : *address`; returns the old
/// value
/// @{

/// \brief 32-bit signed compare-and-swap.
inline int atomicCAS(int* address, int compare, int val) {
  __atomic_compare_exchange_n(address, &compare, val, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  return compare;
}
/// \brief 32-bit unsigned compare-and-swap.
inline unsigned atomicCAS(unsigned* address, unsigned compare, unsigned val) {
  __atomic_compare_exchange_n(address, &compare, val, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  return compare;
}
/// \brief 64-bit compare-and-swap.
inline unsigned long long atomicCAS(unsigned long long* address, unsigned long long compare,
                                    unsigned long long val) {
  __atomic_compare_exchange_n(address, &compare, val, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  return compare;
}
/// \brief 16-bit compare-and-swap.
inline unsigned short atomicCAS(unsigned short* address, unsigned short compare,
                                unsigned short val) {
  __atomic_compare_exchange_n(address, &compare, val, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  return compare;
}

/// @}

/// @name Floating-point atomics (return the old value)
/// @{

/// \brief `*address += val` (a compare-and-swap loop on the bits).
inline float atomicAdd(float* address, float val) {
  return nanoserve::sim::atomic_update(address, [val](float old) { return old + val; });
}
/// \brief `*address += val`.
inline double atomicAdd(double* address, double val) {
  return nanoserve::sim::atomic_update(address, [val](double old) { return old + val; });
}
/// \brief `*address += val`, rounded once to half precision.
inline __half atomicAdd(__half* address, __half val) {
  return nanoserve::sim::atomic_update(address, [val](__half old) {
    return __float2half_rn(__half2float(old) + __half2float(val));
  });
}
/// \brief `*address += val` on both halves.
inline __half2 atomicAdd(__half2* address, __half2 val) {
  return nanoserve::sim::atomic_update(address, [val](__half2 old) { return __hadd2(old, val); });
}
/// \brief `*address += val`, rounded once to bfloat16.
inline __nv_bfloat16 atomicAdd(__nv_bfloat16* address, __nv_bfloat16 val) {
  return nanoserve::sim::atomic_update(address, [val](__nv_bfloat16 old) {
    return __float2bfloat16_rn(__bfloat162float(old) + __bfloat162float(val));
  });
}
/// \brief `*address = val`.
inline float atomicExch(float* address, float val) {
  return nanoserve::sim::atomic_update(address, [val](float) { return val; });
}

/// @}
