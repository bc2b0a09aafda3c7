#pragma once
/// \file
/// \brief `launch_quant_linear`: one weight-only quantized linear layer `Y = X · dequant(W)ᵀ`
/// (or `Y += …`) for any number of input rows, choosing the quantized GEMV (decode) or GEMM
/// (prefill) by the number of rows — the quantized counterpart of `launch_linear`.

#include "kernels/cuda_compat.h"
#include "kernels/dtype.cuh"
#include "kernels/linear_common.cuh"
#include "kernels/qlinear_common.cuh"

namespace nanoserve {

/// \brief Row counts up to this run as a quantized GEMV (v06), larger ones as a GEMM (v03).
///
/// The same reasoning as kLinearGemvMaxRows, not yet a GPU measurement: the GEMV reads the
/// codes once for up to kQGemvMaxBatch (16) rows and stays bandwidth-bound while the work per
/// weight byte is small; at 16 rows an INT4 weight byte feeds 32 multiply-adds, past an H200's
/// ~14 FLOP/byte balance point, so beyond that the GEMM's tiling (each weight dequantized once
/// per 64 rows, reuse through shared memory) is the better shape.
inline constexpr int kQuantLinearGemvMaxRows = 16;

/// \brief `Y = X · dequant(W)ᵀ` (`epilogue` = kStore) or `Y += …` (kAccumulate), on `stream`.
///
/// launch_qgemv for `m <= kQuantLinearGemvMaxRows`; beyond, launch_qgemm_tc (tensor cores,
/// W's tiles dequantized into A: kernels/gemm_tc.h) for fp16/bf16 activations and launch_qgemm
/// for fp32 ones; each takes `Epilogue::kSwiGLU` too (W = [gate; up], y with w.rows / 2
/// columns). Throws std::invalid_argument for a bad view or buffer (`check_quant_linear_args`)
/// or an odd w.rows under kSwiGLU.
/// \param w        quantized weights W (n = w.rows, k = w.cols), see QuantizedWeightView
/// \param x        (m, k) device inputs in activation type A (fp32, fp16, bf16)
/// \param y        (m, n) device outputs in O (A, or fp32); must not alias x or W's arrays
/// \param m        input rows (tokens); 0 launches nothing
/// \param stream   CUDA stream
/// \param epilogue store or accumulate (the residual add fused after wo and w2)
template <typename A = float, typename O = A>
void launch_quant_linear(const QuantizedWeightView& w, const nondeduced_t<A>* x,
                         nondeduced_t<O>* y, int m,
                         cudaStream_t stream, Epilogue epilogue = Epilogue::kStore);

}  // namespace nanoserve
