#pragma once
/// \file
/// \brief GPTQ (Frantar, Ashkboos, Hoefler, Alistarh, "GPTQ: Accurate Post-Training
/// Quantization for Generative Pre-trained Transformers", ICLR 2023).
///
/// GPTQ quantizes W (rows, cols) to minimise the layer's output error on calibration inputs,
/// ‖W X − Ŵ X‖² (X: (cols, N), one calibration input per column, the paper's notation), whose
/// Hessian with respect to any row of W is H = 2 X Xᵀ (cols, cols). From
/// OBS/OBQ: quantizing column j moves it by δ = w_j − q_j, and the remaining columns
/// compensate optimally by −δ / [H⁻¹]_jj · [H⁻¹]_j,: — so error made early is fed forward into
/// columns not yet quantized. GPTQ's three ideas make that practical:
///
///  1. quantize the columns in one fixed order for all rows (here: 0..cols-1, or by
///     decreasing diag(H) with act-order), so one H⁻¹ serves every row;
///  2. the rows of H⁻¹ that step j needs, with columns < j eliminated, are the rows of the
///     upper Cholesky factor U of H⁻¹ (H⁻¹ = Uᵀ U) — one factorization replaces cols
///     rank-one downdates;
///  3. lazy batch updates: within a block of B = 128 columns updates are applied column by
///     column, the rest of the matrix is updated once per block (a GEMM instead of B GEMVs).
///
/// The algorithm box (paper, Algorithm 1; `err` is a column of E):
///
///     H ← H + λI,  λ = 1% · mean(diag H)             dampening (dead columns: H_jj = 1, W:,j = 0)
///     U ← Cholesky(H⁻¹)ᵀ                              upper: H⁻¹ = Uᵀ U
///     for i1 = 0, B, 2B, …:
///       for j = i1 … i1+B−1:
///         if j starts a group: scale, zero ← from the current W:,j..j+G−1
///         Q:,j ← quant(W:,j);   E:,j−i1 ← (W:,j − Q:,j) / U_jj
///         W:,j:i1+B ← W:,j:i1+B − E:,j−i1 · U_j,j:i1+B          (within the block)
///       W:,i1+B: ← W:,i1+B: − E · U_i1:i1+B, i1+B:                (lazy batch update)
///
/// Group scales are chosen when a group's first column is reached, from the weights as error
/// feedback has left them. This implementation shortens the block to a multiple of the group
/// width when needed (B = 128 is already one for G = 32/64/128) so that a group never spans
/// two blocks and those weights are always fully updated (the reference code reads them from
/// the outer matrix, which misses the current block's updates when G does not divide B).
/// Arithmetic is fp64: H is small (cols² ≤ 384² here) and its Cholesky factorization then
/// never fails for lack of precision.

#include <Eigen/Core>
#include <cstdint>

#include "common/quant/quantized_linear.h"

namespace nanoserve::quant {

/// \brief Knobs of GPTQ (defaults are the paper's).
struct GptqOptions {
  double damp_percent = 0.01;  ///< λ = damp_percent · mean(diag H)
  int block_size = 128;        ///< columns per lazy batch update (B)
  bool act_order = false;      ///< quantize columns by decreasing diag(H) ("desc_act")
};

/// \brief What GPTQ produced for one layer.
struct GptqResult {
  QuantizedLinear weight;  ///< the quantized layer (g_idx set with act-order)
  double loss = 0;         ///< GPTQ's error estimate ½ Σ (w − q)² / U_jj² over all elements
};

/// \brief Quantizes W (rows, cols) row-major with Hessian `hessian` (cols, cols), symmetric
/// positive semi-definite: 2 X Xᵀ / N of the layer's calibration inputs
/// (`InputStats::hessian`, calibration.h); only its shape matters, not its scale. Throws `InvalidArgument` for mismatched shapes, bad options, or an
/// H that stays indefinite after dampening.
GptqResult gptq_quantize(const float* w, int rows, int cols, const Eigen::MatrixXd& hessian,
                         const QuantScheme& scheme, const GptqOptions& options = {});

}  // namespace nanoserve::quant
