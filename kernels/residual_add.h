#pragma once
/// \file
/// \brief Residual add, `x += residual`: the skip connection around attention and the MLP.
///
/// Launchers for fp32, fp16 and bf16 storage; the sum is computed in fp32 and rounded once to
/// the storage type (DESIGN.md, "Numbers and precision").

#include <cstdint>

#include "kernels/cuda_compat.h"

namespace nanoserve {

/// \brief `x[i] = x[i] + residual[i]` for i in [0, n), on `stream`.
/// \tparam T storage type: float, __half or __nv_bfloat16
/// \param x (n,) device buffer, updated in place
/// \param residual (n,) device buffer
/// \param n number of elements (0 launches nothing; negative throws std::invalid_argument)
/// \param stream CUDA stream
template <typename T>
void launch_residual_add(T* x, const T* residual, std::int64_t n, cudaStream_t stream);

}  // namespace nanoserve
