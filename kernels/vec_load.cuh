#pragma once
/// \file
/// \brief 16-byte loads of storage values (4 fp32 or 8 fp16/bf16, or 16 bytes of packed codes)
/// and of fp32 inputs: the widest load a thread can issue, which is what a memory-bound kernel
/// (attention decode streaming the KV cache, GEMV streaming W) needs to approach the device's
/// copy bandwidth. The one copy of these helpers; every kernel family includes it.
///
/// The loaded `uint4` is unpacked with bit operations (`__uint_as_float`, `__ushort_as_half`),
/// not by reinterpreting its address as another type: identical code on the GPU (register moves)
/// and well-defined C++ in the simulator.

#include <cstdint>
#include <cstring>

#include "kernels/dtype.cuh"

namespace nanoserve {

/// \brief True when `p` is 16-byte aligned (what every 16-byte vector load needs).
__host__ __device__ __forceinline__ bool aligned16(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
}

/// \brief Elements of T in one 16-byte vector.
template <typename T>
constexpr int kVec16 = 16 / static_cast<int>(sizeof(T));

/// \brief Unpacks element `i` of a 16-byte vector of T as fp32.
template <typename T>
__device__ __forceinline__ float unpack16(const uint4& raw, int i);

/// \brief fp32: element `i` of 4.
template <>
__device__ __forceinline__ float unpack16<float>(const uint4& raw, int i) {
  const unsigned word = i == 0 ? raw.x : i == 1 ? raw.y : i == 2 ? raw.z : raw.w;
  return __uint_as_float(word);
}

/// \brief The 32-bit word holding 16-bit element `i` of 8 (little-endian: element 0 is low).
__device__ __forceinline__ unsigned short half_word(const uint4& raw, int i) {
  const unsigned word = i < 2 ? raw.x : i < 4 ? raw.y : i < 6 ? raw.z : raw.w;
  return static_cast<unsigned short>(i % 2 == 0 ? word & 0xffffu : word >> 16);
}

/// \brief fp16: element `i` of 8.
template <>
__device__ __forceinline__ float unpack16<__half>(const uint4& raw, int i) {
  return __half2float(__ushort_as_half(half_word(raw, i)));
}

/// \brief bf16: element `i` of 8.
template <>
__device__ __forceinline__ float unpack16<__nv_bfloat16>(const uint4& raw, int i) {
  return __bfloat162float(__ushort_as_bfloat16(half_word(raw, i)));
}

/// \brief Loads 16 bytes (kVec16<T> elements) from a 16-byte aligned address and converts
/// them to fp32.
/// \param src (kVec16<T>) device memory, 16-byte aligned
/// \param dst (kVec16<T>) registers
template <typename T>
__device__ __forceinline__ void load16_as_float(const T* src, float* dst) {
  const uint4 raw = *reinterpret_cast<const uint4*>(src);
  NS_UNROLL
  for (int i = 0; i < kVec16<T>; ++i) dst[i] = unpack16<T>(raw, i);
}

/// \brief Loads 16 bytes from a 16-byte aligned address, marked streaming (evict-first) on a
/// GPU: for data used once (weights, codes), which should not push reused data (x) out of the
/// caches. The simulator's portable fallback is a plain 16-byte copy.
__device__ __forceinline__ uint4 load16_streaming(const void* p) {
#if defined(__CUDA_ARCH__)
  return __ldcs(reinterpret_cast<const uint4*>(p));
#else
  uint4 v;
  std::memcpy(&v, p, sizeof(v));
  return v;
#endif
}

/// \brief `n` consecutive fp32 values from `p` in 16-byte loads (`p` 16-byte aligned, `n` a
/// multiple of 4).
template <int n>
__device__ __forceinline__ void load_floats(const float* p, float (&out)[n]) {
  static_assert(n % 4 == 0, "whole float4 vectors");
  const float4* p4 = reinterpret_cast<const float4*>(p);
  NS_UNROLL
  for (int i = 0; i < n / 4; ++i) {
    const float4 v = p4[i];
    out[4 * i + 0] = v.x;
    out[4 * i + 1] = v.y;
    out[4 * i + 2] = v.z;
    out[4 * i + 3] = v.w;
  }
}

/// \brief `n` consecutive values of storage type T from `p` as fp32: 16-byte loads where whole
/// vectors fit (fp32: `n` a multiple of 4, fp16/bf16: of 8; `p` 16-byte aligned), scalar loads
/// otherwise (`p` aligned to its element).
template <int n, typename T>
__device__ __forceinline__ void load_as_floats(const T* p, float (&out)[n]) {
  if constexpr (sizeof(T) == 4) {
    load_floats<n>(reinterpret_cast<const float*>(p), out);
  } else if constexpr (n % kVec16<T> == 0) {
    NS_UNROLL
    for (int i = 0; i < n; i += kVec16<T>) load16_as_float(p + i, out + i);
  } else {
    NS_UNROLL
    for (int i = 0; i < n; ++i) out[i] = to_float(p[i]);
  }
}

}  // namespace nanoserve
