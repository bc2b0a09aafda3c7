#pragma once
/// \file
/// \brief 16-byte loads of storage values (4 fp32 or 8 fp16/bf16) converted to fp32: the
/// widest load a thread can issue, which is what a memory-bound kernel (attention decode,
/// streaming the KV cache) needs to approach the device's copy bandwidth.
///
/// The loaded `uint4` is unpacked with bit operations (`__uint_as_float`, `__ushort_as_half`),
/// not by reinterpreting its address as another type: identical code on the GPU (register moves)
/// and well-defined C++ in the simulator.

#include "kernels/dtype.cuh"

namespace nanoserve {

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

}  // namespace nanoserve
