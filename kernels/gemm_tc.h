#pragma once
/// \file
/// \brief Tensor-core GEMM for prefill and batched rows: `Y = X Wᵀ` with X and W both in
/// fp16 or bf16, fp32 accumulation on the tensor cores (`nvcuda::wmma`, m16n16k16), Y in fp32
/// or in the input type.
///
/// Layout as kernels/linear_common.cuh (nn.Linear), except that X is in T too:
/// ```
///   W (n, k)  row-major, T      one output feature per row
///   X (m, k)  row-major, T      one token per row
///   Y (m, n)  row-major, OutT   Y = X Wᵀ (kStore) or Y += X Wᵀ (kAccumulate)
/// ```
/// The versions (kernels/gemm_tc.cu) each add one idea, after siboehm/SGEMM_CUDA:
///
/// | version | idea it adds |
/// |---|---|
/// | v01 | one warp per 16×16 tile of Y, WMMA fragments loaded straight from global memory (m, n, k multiples of 16) |
/// | v02 | 64×64 block tiles staged in shared memory, 4 warps × 2×2 accumulators, any m, n, k |
/// | v03 | v02 with a double-buffered main loop: `__pipeline_memcpy_async` fills the next k tile while the tensor cores work on this one |
///
/// `launch_qgemm_tc` is v03 for weight-only quantized W (W4A16 / W8A16): tiles of W are
/// dequantized into shared memory instead of copied.
///
/// v02, v03 and `launch_qgemm_tc` also take `Epilogue::kSwiGLU` (W = [gate; up] with 2h rows,
/// Y with h columns: a block stages the gate and up rows of its 32 outputs and stores
/// silu(gate) · up; kernels/linear_common.cuh); v01 throws std::invalid_argument for it.
///
/// The sum is accumulated in fp32 and converted to OutT once: kAccumulate reads Y, adds the
/// fp32 sum and rounds once (`y = OutT(float(y) + Σ)`), the fused residual add of the `wo` and
/// `w2` projections.

#include "kernels/cuda_compat.h"
#include "kernels/linear_common.cuh"
#include "kernels/qlinear_common.cuh"

namespace nanoserve {

/// \brief Number of tensor-core GEMM versions (`launch_gemm_tc` accepts 1..kGemmTcVersions).
inline constexpr int kGemmTcVersions = 3;

/// \brief True when v01 can run this problem: m, n and k multiples of 16 (v01 has no edge
/// handling: every fragment is a whole 16×16 tile of X, W or Y) and `w`, `x` 32-byte aligned
/// (WMMA's pointer rule; cudaMalloc'd buffers are).
bool gemm_tc_v01_supports(const void* w, const void* x, int m, int n, int k);

/// \brief `Y = X Wᵀ` (kStore) or `Y += X Wᵀ` (kAccumulate) on the tensor cores, on `stream`.
///
/// Throws std::invalid_argument for negative sizes, null buffers, a version outside
/// 1..kGemmTcVersions, or v01 on a problem it does not support (gemm_tc_v01_supports); m = 0 or
/// n = 0 launches nothing, k = 0 gives Y = 0 (kStore) or leaves Y unchanged (kAccumulate).
/// \tparam T    input type of X and W: __half or __nv_bfloat16
/// \tparam OutT output type: float or T
/// \param w        (n, k) device weights, row-major
/// \param x        (m, k) device inputs, row-major
/// \param y        (m, n) device outputs, row-major; must not alias w or x
/// \param m        rows of X and Y (tokens)
/// \param n        rows of W = columns of Y (output features)
/// \param k        reduction length (input features)
/// \param stream   CUDA stream
/// \param epilogue store or accumulate
/// \param version  1..kGemmTcVersions (default: the latest)
template <typename T, typename OutT>
void launch_gemm_tc(const T* w, const T* x, OutT* y, int m, int n, int k, cudaStream_t stream,
                    Epilogue epilogue = Epilogue::kStore, int version = kGemmTcVersions);

/// \brief The weight-only quantized GEMM on the tensor cores (W4A16 / W8A16 prefill):
/// `Y = X Wᵀ` with W = s · (q − z) given as codes (kernels/qlinear_common.cuh, chapter 5's
/// format: any group size, act-order), X in T. v03's double-buffered kernel, except that each
/// tile of W is dequantized into shared memory (rounded to T once, as the tensor core takes
/// only T) instead of copied; X's tiles still arrive by `__pipeline_memcpy_async`.
///
/// Throws std::invalid_argument for bits other than 4 or 8, group_size < 1, negative sizes or
/// null buffers; m = 0 or w.rows = 0 launches nothing.
/// \tparam T    input type of X (and of the dequantized W tiles): __half or __nv_bfloat16
/// \tparam OutT output type: float or T
/// \param w        (w.rows, w.cols) quantized weights on the device
/// \param x        (m, w.cols) device inputs, row-major
/// \param y        (m, w.rows) device outputs, row-major; must not alias x or w's arrays
/// \param m        rows of X and Y (tokens)
/// \param stream   CUDA stream
/// \param epilogue store or accumulate
template <typename T, typename OutT>
void launch_qgemm_tc(const QuantizedWeightView& w, const T* x, OutT* y, int m,
                     cudaStream_t stream, Epilogue epilogue = Epilogue::kStore);

}  // namespace nanoserve
