#pragma once
/// \file
/// \brief GEMM for prefill: `Y = X Wᵀ` for many input rows at once, W in storage type T (fp32,
/// fp16, bf16), X in activation type A, Y in A or fp32, fp32 accumulation. Layouts: kernels/linear_common.cuh.
///
/// With M rows each weight is used M times, so unlike GEMV the work can become compute-bound;
/// the versions (kernels/gemm.cu, after siboehm/SGEMM_CUDA) raise the reuse step by step:
///
/// | version | idea it adds |
/// |---|---|
/// | v01 | one thread per output element (naive) |
/// | v02 | 16×16 tiles of X and W staged in shared memory, each loaded value used 16 times |
/// | v03 | 64×64 block tiles, each thread computes a 4×4 register tile (2D blocktiling) |
///
/// v03 also takes `Epilogue::kSwiGLU` (W = [gate; up], Y with n / 2 columns: the fused gate+up
/// projection, kernels/linear_common.cuh); v01 and v02 throw std::invalid_argument.
///
/// The numbered versions and launch_gemm_version are built for fp32 activations (A = O = float);
/// launch_gemm for every activation type A and output O = A or fp32.
///
/// The kernels are written once over an operand loader and also serve the quantized GEMM
/// (kernels/qgemm.h) with the same version numbers. Every launcher handles any M, N, K (partial
/// tiles are zero-padded) and throws std::invalid_argument for negative sizes or null buffers
/// (`check_linear_args`).

#include "kernels/cuda_compat.h"
#include "kernels/dtype.cuh"
#include "kernels/linear_common.cuh"

namespace nanoserve {

/// \brief Number of GEMM versions (`launch_gemm_version` accepts 1..kGemmVersions).
inline constexpr int kGemmVersions = 3;

/// \brief v01: one thread per output element, reading X and W straight from global memory.
/// \tparam T storage type of W: float, __half or __nv_bfloat16
/// \tparam A storage type of X (activations): float, __half or __nv_bfloat16
/// \tparam O storage type of Y: A, or float (fp32 logits from A activations)
/// \param w        (n, k) device weights, row-major
/// \param x        (m, k) device inputs
/// \param y        (m, n) device outputs; must not alias w or x
/// \param m        rows of X and Y (0 launches nothing)
/// \param n        rows of W = columns of Y
/// \param k        reduction length (0 gives Y = 0)
/// \param stream   CUDA stream
/// \param epilogue store (Y = X Wᵀ) or accumulate (Y += X Wᵀ)
template <typename T, typename A = float, typename O = A>
void launch_gemm_v01(const T* w, const nondeduced_t<A>* x, nondeduced_t<O>* y, int m, int n, int k,
                     cudaStream_t stream, Epilogue epilogue = Epilogue::kStore);

/// \brief v02: shared-memory tiling (16×16 tiles). Parameters as launch_gemm_v01.
template <typename T, typename A = float, typename O = A>
void launch_gemm_v02(const T* w, const nondeduced_t<A>* x, nondeduced_t<O>* y, int m, int n, int k,
                     cudaStream_t stream, Epilogue epilogue = Epilogue::kStore);

/// \brief v03: 2D register blocktiling (64×64 block tile, 4×4 per thread). Parameters as
/// launch_gemm_v01.
template <typename T, typename A = float, typename O = A>
void launch_gemm_v03(const T* w, const nondeduced_t<A>* x, nondeduced_t<O>* y, int m, int n, int k,
                     cudaStream_t stream, Epilogue epilogue = Epilogue::kStore);

/// \brief Runs version `version` (1..kGemmVersions; anything else throws
/// std::invalid_argument). Parameters as launch_gemm_v01.
template <typename T, typename A = float, typename O = A>
void launch_gemm_version(int version, const T* w, const nondeduced_t<A>* x, nondeduced_t<O>* y,
                         int m, int n, int k,
                         cudaStream_t stream, Epilogue epilogue = Epilogue::kStore);

/// \brief The best GEMM version (v03). Parameters as launch_gemm_v01.
template <typename T, typename A = float, typename O = A>
void launch_gemm(const T* w, const nondeduced_t<A>* x, nondeduced_t<O>* y, int m, int n, int k,
                 cudaStream_t stream,
                 Epilogue epilogue = Epilogue::kStore);

}  // namespace nanoserve
