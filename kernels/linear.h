#pragma once
/// \file
/// \brief `launch_linear`: one linear layer `Y = X Wᵀ` (or `Y += X Wᵀ`) for any number of input
/// rows, choosing GEMV (decode) or GEMM (prefill) by the number of rows.

#include "kernels/cuda_compat.h"
#include "kernels/dtype.cuh"
#include "kernels/linear_common.cuh"

namespace nanoserve {

/// \brief Row counts up to this run as a GEMV (v03), larger ones as a GEMM (v03).
///
/// A reasoned choice, not yet a GPU measurement (the simulator's timings say nothing about a
/// GPU; `bench_kernels` prints both kernels at 1..64 rows so a GPU run can revisit it).
/// GEMV v03 reads W once for up to kGemvMaxBatch (16) rows and is bandwidth-bound while the
/// multiply-adds per weight byte stay below the device's FLOP/byte ratio (an H200: ~67 fp32
/// TFLOP/s over ~4.8 TB/s ≈ 14 FLOP per byte, i.e. ~7–14 rows of fp16 weights). GEMM v03 also
/// reads W once for up to 64 rows, but computes whole 64-row tiles: at 16 rows three quarters of
/// its multiply-adds are padding. Around 16 rows both are limited by arithmetic, so the switch
/// sits there, where GEMV still reads W exactly once.
inline constexpr int kLinearGemvMaxRows = 16;

/// \brief `Y = X Wᵀ` (`epilogue` = kStore) or `Y += X Wᵀ` (kAccumulate), on `stream`.
///
/// GEMV v03 for `m <= kLinearGemvMaxRows`; beyond, the tensor-core GEMM v03 (kernels/gemm_tc.h)
/// when W and X are both fp16 or both bf16 (and Y is that type or fp32), else GEMM v03 on CUDA
/// cores. X is widened to fp32 on load (the tensor cores multiply the 16-bit values exactly), the
/// sum kept in fp32 and rounded to O once on store; kAccumulate widens the old Y, adds, rounds
/// once. `Epilogue::kSwiGLU` (W = [gate; up], n even, Y with n / 2 columns) runs on every one of
/// these paths. Throws std::invalid_argument for negative sizes, null buffers or an odd n under
/// kSwiGLU.
/// \tparam T storage type of W: float, __half or __nv_bfloat16
/// \tparam A storage type of X (activations): float, __half or __nv_bfloat16
/// \tparam O storage type of Y: A, or float (fp32 logits from A activations)
/// \param w        (n, k) device weights, row-major
/// \param x        (m, k) device inputs in A
/// \param y        (m, n) device outputs in O; must not alias w or x
/// \param m        input rows (tokens); 0 launches nothing
/// \param n        output features (rows of W)
/// \param k        input features (columns of W); 0 gives Y = 0
/// \param stream   CUDA stream
/// \param epilogue store or accumulate
template <typename T, typename A = float, typename O = A>
void launch_linear(const T* w, const nondeduced_t<A>* x, nondeduced_t<O>* y, int m, int n, int k,
                   cudaStream_t stream, Epilogue epilogue = Epilogue::kStore);

}  // namespace nanoserve
