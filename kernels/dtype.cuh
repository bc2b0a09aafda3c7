#pragma once
/// \file
/// \brief Storage types of weights, activations and KV (fp32, fp16, bf16) and their exact
/// conversions to and from the fp32 that every kernel accumulates in (docs/design.md, "Numbers and
/// precision"). Included by kernel files (after cuda_compat.h) and by host code that fills
/// device buffers.

#include <string>

#include "kernels/cuda_compat.h"

namespace nanoserve {

/// \brief A storage type chosen at run time (`--dtype`), mapped to a C++ type by `dispatch_dtype`.
enum class DType {
  kF32,   ///< float
  kF16,   ///< __half (IEEE binary16)
  kBF16,  ///< __nv_bfloat16 (bfloat16)
};

/// \brief "fp32", "fp16" or "bf16".
inline const char* dtype_name(DType t) {
  return t == DType::kF32 ? "fp32" : t == DType::kF16 ? "fp16" : "bf16";
}

/// \brief Bytes per element of a storage type.
inline int dtype_bytes(DType t) { return t == DType::kF32 ? 4 : 2; }

/// \brief Parses "fp32"/"f32"/"float32", "fp16"/"f16"/"half", "bf16"/"bfloat16"; throws
/// std::invalid_argument naming the value otherwise.
DType parse_dtype(const std::string& name);

/// \brief Calls `f(T{})` with T the C++ storage type of `t` (float, __half, __nv_bfloat16).
template <typename F>
decltype(auto) dispatch_dtype(DType t, F&& f) {
  switch (t) {
    case DType::kF16: return f(__half{});
    case DType::kBF16: return f(__nv_bfloat16{});
    case DType::kF32: default: return f(float{});
  }
}

/// \brief Applies `X(T)` to each storage type: what a kernel file's explicit instantiations of
/// its templated launchers use, e.g. `NANOSERVE_FOR_EACH_STORAGE_TYPE(INSTANTIATE)`.
#define NANOSERVE_FOR_EACH_STORAGE_TYPE(X) X(float) X(__half) X(__nv_bfloat16)

/// \brief Applies `X(T, A)` to every (storage type T, storage type A) pair: the instantiations
/// of a launcher templated on a weight or KV type T and an activation type A.
#define NANOSERVE_FOR_EACH_STORAGE_PAIR(X)                                      \
  X(float, float) X(float, __half) X(float, __nv_bfloat16)                      \
  X(__half, float) X(__half, __half) X(__half, __nv_bfloat16)                   \
  X(__nv_bfloat16, float) X(__nv_bfloat16, __half) X(__nv_bfloat16, __nv_bfloat16)

/// \brief `T` in a non-deduced context. The launchers take their activation type A (and output
/// type O) this way: named explicitly (`launch_rmsnorm<W, A>(…)`) or left at its default, float,
/// but never deduced from an argument — so the fp32 calls of the tests and benchmarks, which
/// pass null pointers to check argument errors, resolve as they did before A existed.
template <typename T>
struct NonDeduced {
  using type = T;  ///< T itself
};
/// \brief `T`, not deducible (see NonDeduced).
template <typename T>
using nondeduced_t = typename NonDeduced<T>::type;

/// \brief Storage value -> fp32 (exact).
__host__ __device__ __forceinline__ float to_float(float v) { return v; }
/// \brief Storage value -> fp32 (exact).
__host__ __device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
/// \brief Storage value -> fp32 (exact).
__host__ __device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

/// \brief fp32 -> storage type, round to nearest even.
template <typename T>
__host__ __device__ __forceinline__ T from_float(float v);
/// \brief fp32 -> fp32 (identity).
template <>
__host__ __device__ __forceinline__ float from_float<float>(float v) { return v; }
/// \brief fp32 -> fp16, round to nearest even.
template <>
__host__ __device__ __forceinline__ __half from_float<__half>(float v) {
  return __float2half_rn(v);
}
/// \brief fp32 -> bf16, round to nearest even.
template <>
__host__ __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

/// \brief The DType of a C++ storage type.
template <typename T>
constexpr DType dtype_of();
/// \brief fp32.
template <>
constexpr DType dtype_of<float>() { return DType::kF32; }
/// \brief fp16.
template <>
constexpr DType dtype_of<__half>() { return DType::kF16; }
/// \brief bf16.
template <>
constexpr DType dtype_of<__nv_bfloat16>() { return DType::kBF16; }

}  // namespace nanoserve
