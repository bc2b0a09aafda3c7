#pragma once
/// \file
/// \brief W8A16 / W4A16 GEMM for prefill: `Y = X · dequant(W)ᵀ` for many input rows at once, W
/// weight-only quantized (layout: kernels/qlinear_common.cuh), X in activation type A, Y in A or fp32, fp32 accumulation.
///
/// Prefill uses each weight once per row of X, so unlike decode it can be compute-bound, and
/// dequantizing costs little when it is done once per *tile*. These are the dense GEMM's kernels
/// (kernels/gemm.cu) over the dequantizing operand loader `QuantWeights`: a W value is
/// dequantized where it enters the computation, so from v02 on each block dequantizes its tile
/// of W into shared memory, once per 16 (v02) or 64 (v03) rows of X instead of once per product.
/// Version N is gemm vN:
///
/// | version | idea it adds |
/// |---|---|
/// | v01 | one thread per output element, each weight dequantized once per product (naive) |
/// | v02 | 16×16 tiles of X and dequantized W in shared memory, each value used 16 times |
/// | v03 | 64×64 block tiles, 4×4 register tiles per thread (2D blocktiling) |
///
/// The numbered versions and launch_qgemm_version are built for fp32 activations; launch_qgemm
/// for every activation type A and output O = A or fp32.
///
/// All handle every shape the format allows (odd widths, narrow last groups, act-order g_idx)
/// and throw std::invalid_argument for a bad view or buffer (`check_quant_linear_args`).

#include "kernels/cuda_compat.h"
#include "kernels/dtype.cuh"
#include "kernels/linear_common.cuh"
#include "kernels/qlinear_common.cuh"

namespace nanoserve {

/// \brief Number of quantized GEMM versions (`launch_qgemm_version` accepts 1..kQGemmVersions),
/// the same as kGemmVersions: version N is gemm vN over dequantized weights.
inline constexpr int kQGemmVersions = 3;

/// \brief v01: one thread per output element, dequantizing W as it reads it.
/// \param w        quantized weights W (n = w.rows, k = w.cols), see QuantizedWeightView
/// \param x        (m, k) device inputs in activation type A (fp32, fp16, bf16)
/// \param y        (m, n) device outputs in O (A, or fp32); must not alias x or W's arrays
/// \param m        rows of X and Y (0 launches nothing)
/// \param stream   CUDA stream
/// \param epilogue store (Y = X Wᵀ) or accumulate (Y += X Wᵀ)
template <typename A = float, typename O = A>
void launch_qgemm_v01(const QuantizedWeightView& w, const nondeduced_t<A>* x, nondeduced_t<O>* y,
                      int m,
                      cudaStream_t stream, Epilogue epilogue = Epilogue::kStore);

/// \brief v02: 16×16 shared-memory tiles, W dequantized into its tile. Parameters as
/// launch_qgemm_v01.
template <typename A = float, typename O = A>
void launch_qgemm_v02(const QuantizedWeightView& w, const nondeduced_t<A>* x, nondeduced_t<O>* y,
                      int m,
                      cudaStream_t stream, Epilogue epilogue = Epilogue::kStore);

/// \brief v03: 64×64 block tiles, 4×4 register tiles, W dequantized into shared memory.
/// Parameters as launch_qgemm_v01.
template <typename A = float, typename O = A>
void launch_qgemm_v03(const QuantizedWeightView& w, const nondeduced_t<A>* x, nondeduced_t<O>* y,
                      int m,
                      cudaStream_t stream, Epilogue epilogue = Epilogue::kStore);

/// \brief Runs version `version` (1..kQGemmVersions; anything else throws
/// std::invalid_argument). Parameters as launch_qgemm_v01.
template <typename A = float, typename O = A>
void launch_qgemm_version(int version, const QuantizedWeightView& w, const nondeduced_t<A>* x,
                          nondeduced_t<O>* y,
                          int m, cudaStream_t stream, Epilogue epilogue = Epilogue::kStore);

/// \brief The best quantized GEMM version (v03). Parameters as launch_qgemm_v01.
template <typename A = float, typename O = A>
void launch_qgemm(const QuantizedWeightView& w, const nondeduced_t<A>* x, nondeduced_t<O>* y, int m,
                  cudaStream_t stream, Epilogue epilogue = Epilogue::kStore);

}  // namespace nanoserve
