#pragma once
/// \file
/// \brief RMSNorm (Zhang & Sennrich 2019) of each row of fp32 activations with a gain vector
/// in the storage type: `out = x / sqrt(mean(x²) + eps) * gain`, the normalisation before
/// attention, before the MLP and before the classifier.

#include "kernels/cuda_compat.h"

namespace nanoserve {

/// \brief Number of RMSNorm kernel versions (`version` 1..this; 0 lets the launcher choose).
inline constexpr int kRmsnormVersions = 2;

/// \brief `out[r] = x[r] * (1 / sqrt(mean(x[r]²) + eps)) * gain` for each row, on `stream`;
/// the same meaning as `oracle::rmsnorm`.
///
/// Versions: 1 = one block per row (block-wide reduction: warp shuffles, then shared memory);
/// 2 = one warp per row, several rows per block (shuffles only: no shared memory, no
/// `__syncthreads`), better for the small widths of small models. 0 picks 2 when
/// `dim <= 1024`, else 1.
/// \tparam T storage type of the gain: float, __half or __nv_bfloat16
/// \param x       (rows, dim) fp32 activations
/// \param gain    (dim) learned scale
/// \param rows    number of rows (0 launches nothing)
/// \param dim     values per row (>= 1)
/// \param eps     added to the mean of squares inside the root
/// \param out     (rows, dim) fp32; may alias `x` (in place)
/// \param stream  CUDA stream
/// \param version 0 (auto) or 1..kRmsnormVersions
/// \throws std::invalid_argument for negative rows, dim < 1 or a bad version
template <typename T>
void launch_rmsnorm(const float* x, const T* gain, int rows, int dim, float eps, float* out,
                    cudaStream_t stream, int version = 0);

}  // namespace nanoserve
