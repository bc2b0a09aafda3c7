#pragma once
/// \file
/// \brief The tolerance a kernel forward is checked with against the CPU oracle run on the same
/// rounded weights (`round_weights`, `quantized_oracle_model`): what remains is the kernels'
/// arithmetic and the storage types of the activations and of the KV cache
/// (common/tolerances.h says why each is what it is). The programs' `--check` use it.

#include "common/tolerances.h"
#include "kernels/dtype.cuh"

namespace nanoserve::engine {

/// \brief The tolerance for activations in `dtype` and a KV cache in `kv_dtype`: the coarser of
/// the two decides (bf16 rounds more than fp16, fp16 more than fp32).
inline Tolerance check_tolerance(DType dtype, DType kv_dtype) {
  const auto rank = [](DType t) { return t == DType::kBF16 ? 2 : t == DType::kF16 ? 1 : 0; };
  switch (rank(kv_dtype) > rank(dtype) ? kv_dtype : dtype) {
    case DType::kF16: return tol::kKernelForwardActFp16;
    case DType::kBF16: return tol::kKernelForwardActBf16;
    case DType::kF32: default: return tol::kFp32Forward;
  }
}

}  // namespace nanoserve::engine
