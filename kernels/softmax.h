#pragma once
/// \file
/// \brief Numerically stable softmax of each row of fp32 values: `exp(x - max) / Σ exp(x - max)`.

#include "kernels/cuda_compat.h"

namespace nanoserve {

/// \brief Number of softmax kernel versions.
inline constexpr int kSoftmaxVersions = 2;

/// \brief `out[r] = softmax(x[r])` for each row, on `stream`; the same meaning as
/// `oracle::softmax`: `-inf` entries get probability 0, and a row needs at least one finite
/// value (a row of only `-inf` has no distribution and comes out NaN, as in the oracle).
///
/// Versions: 1 = one block per row, three passes over the row (max, sum, write); 2 = one block
/// per row with the online normaliser (Milakov & Gimelshein 2018): the max and the sum in a
/// single pass, two passes in all. 0 picks 2.
/// \param x       (rows, n) fp32
/// \param rows    number of rows (0 launches nothing)
/// \param n       values per row (>= 1)
/// \param out     (rows, n) fp32; may alias `x`
/// \param stream  CUDA stream
/// \param version 0 (auto) or 1..kSoftmaxVersions
/// \throws std::invalid_argument for negative rows, n < 1 or a bad version
void launch_softmax(const float* x, int rows, int n, float* out, cudaStream_t stream,
                    int version = 0);

}  // namespace nanoserve
