#pragma once
/// \file
/// \brief RMSNorm (Zhang & Sennrich 2019) of each row of activations (fp32, fp16 or bf16) with
/// a gain vector in the weights' storage type: `out = x / sqrt(mean(x²) + eps) * gain`, the normalisation before
/// attention, before the MLP and before the classifier.

#include "kernels/cuda_compat.h"
#include "kernels/dtype.cuh"

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
/// The row is widened to fp32, the mean of squares, the scale and the product are fp32, and
/// each output is rounded once to A.
/// \tparam T storage type of the gain: float, __half or __nv_bfloat16
/// \tparam A storage type of the activations x and out: float, __half or __nv_bfloat16
/// \param x       (rows, dim) activations
/// \param gain    (dim) learned scale
/// \param rows    number of rows (0 launches nothing)
/// \param dim     values per row (>= 1)
/// \param eps     added to the mean of squares inside the root
/// \param out     (rows, dim) activations; may alias `x` (in place)
/// \param stream  CUDA stream
/// \param version 0 (auto) or 1..kRmsnormVersions
/// \throws std::invalid_argument for negative rows, dim < 1 or a bad version
template <typename T, typename A = float>
void launch_rmsnorm(const nondeduced_t<A>* x, const T* gain, int rows, int dim, float eps,
                    nondeduced_t<A>* out,
                    cudaStream_t stream, int version = 0);

}  // namespace nanoserve
