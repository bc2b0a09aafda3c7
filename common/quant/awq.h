#pragma once
/// \file
/// \brief AWQ (Lin, Tang, Tang, Yang, Chen, Wang, Xiao, Dang, Gan, Han, "AWQ: Activation-aware
/// Weight Quantization for LLM Compression and Acceleration", MLSys 2024).
///
/// Observation: a small fraction of input channels carries large activations, and the weights
/// that multiply them matter most. Instead of keeping those weights in higher precision, AWQ
/// scales them up before quantizing — a weight column multiplied by s > 1 is rounded with a
/// relatively smaller error — and divides the input by s, which is free when folded into the
/// operation that produces the input:
///
///     y = W x = (W · diag(s)) (diag(s)⁻¹ x)        quantize W · diag(s), feed x / s
///
/// The scale is searched, not derived: s = mean|x|^α (per input channel, normalized so that
/// max(s)·min(s) = 1), α on a grid of 20 points {0, 0.05, …, 0.95} (as the reference code),
/// minimizing the output error of the linears that share the input,
///
///     Σ_linears ‖W X − Q(W · diag(s)) · diag(s)⁻¹ X‖²      (computed from G = Σ x xᵀ)
///
/// α = 0 gives s = 1, i.e. RTN, so the search can only match or improve RTN on this error.
/// (The reference measures the attention / MLP module output instead, which needs the
/// attention itself; measuring the linears' outputs keeps each search one matrix expression.)
///
/// Where s goes (so inference keeps its form — no extra multiply per token):
///
///     attn_norm → wq, wk, wv     attn_norm /= s        wq, wk, wv columns *= s
///     ffn_norm  → w1, w3         ffn_norm  /= s        w1, w3 columns *= s
///     w3        → w2             w3 rows   /= s        w2 columns *= s   (h = silu(w1 x)·(w3 x)
///                                                                            is linear in w3 x)
///     wv        → wo             wv rows   /= s        wo columns *= s   only when q_dim == kv_dim
///
/// **Why wo cannot be scaled under GQA.** wo's input channel (h, d) is dimension d of query
/// head h's attention output, Σ_t p_h,t · v_t; dividing it by s needs the values divided by s,
/// but v has one channel (k, d) per *KV* head, shared by the `gqa_group` query heads h with
/// h / gqa_group = k. So s would have to be equal across those heads — the per-channel freedom
/// AWQ relies on is gone (the reference code skips wo whenever the v and o shapes differ; both
/// real models here use GQA, so their wo is only clipped).
///
/// **Clipping** (optional, on by default as in the reference): for each row and group of every
/// linear except wq and wk (whose errors the attention softmax amplifies), shrink the clamp
/// range to max|w|·(1 − i/20), i = 0 … 9, and keep the one whose quantized group gives the
/// smallest output error on the group's inputs (i = 0 is no clipping).

#include <Eigen/Core>
#include <array>
#include <vector>

#include "common/model.h"
#include "common/quant/calibration.h"
#include "common/quant/quant_scheme.h"

namespace nanoserve::quant {

/// \brief Knobs of AWQ (defaults are the reference implementation's).
struct AwqOptions {
  int n_grid = 20;          ///< α ∈ {0, 1/n_grid, …, (n_grid − 1)/n_grid}
  bool clip = true;         ///< search a clipping range per (row, group)
  int clip_grid = 20;       ///< clipping steps of 1/clip_grid of the range
  double max_shrink = 0.5;  ///< try shrinking the range by less than this fraction
};

/// \brief A read-only linear layer: `data` (rows, cols) row-major.
struct LinearView {
  const float* data;  ///< (rows, cols)
  int rows;           ///< output features
};

/// \brief The outcome of one scale search.
struct AwqScaleResult {
  std::vector<float> scales;  ///< (cols) s, max(s)·min(s) = 1
  double alpha = 0;           ///< the chosen exponent
  double error = 0;           ///< output error at the chosen α
  double rtn_error = 0;       ///< output error at α = 0 (plain RTN)
};

/// \brief Searches s = mean|x|^α for linears sharing one input with statistics `stats`
/// (cols = stats' width). Ties keep the smaller α. Throws `InvalidArgument` for n_grid < 1.
AwqScaleResult awq_search_scales(const std::vector<LinearView>& linears, const InputStats& stats,
                                 const QuantScheme& scheme, int n_grid);

/// \brief Folds s into an RMSNorm gain and the linears it feeds: `norm[c] /= s[c]`, every
/// linear's column c `*= s[c]` (each linear (rows_i, s.size()) row-major).
void fold_scales_into_norm(std::vector<float>& norm, const std::vector<std::vector<float>*>& linears,
                           const std::vector<float>& s);

/// \brief Folds s between two linears: rows of `prev` (s.size(), prev_cols) `/= s`, columns of
/// `next` (next_rows, s.size()) `*= s` — the output of prev is the input of next (directly, or
/// through an operation linear in it, like the SwiGLU product for w3 → w2).
void fold_scales_into_linear(std::vector<float>& prev, std::vector<float>& next,
                             const std::vector<float>& s);

/// \brief AWQ clipping of one linear (rows, cols) in place, on inputs with Gram matrix `gram`
/// (cols, cols). Returns how many (row, group) ranges were shrunk.
int awq_clip(std::vector<float>& w, int rows, const Eigen::MatrixXd& gram,
             const QuantScheme& scheme, const AwqOptions& options);

/// \brief What AWQ did to one block.
struct AwqLayerReport {
  double alpha_qkv = 0;    ///< α for wq/wk/wv
  double alpha_wo = -1;    ///< α for wo (−1: not scaled, GQA)
  double alpha_w13 = 0;    ///< α for w1/w3
  double alpha_w2 = 0;     ///< α for w2
  int clipped_groups = 0;  ///< (row, group) ranges shrunk over all clipped linears
  /// \brief By `oracle::LinearInput`: the s each input is now divided by (empty: unscaled) —
  /// what turns the transformed weights back into the original model's coordinates.
  std::array<std::vector<float>, 4> input_scales;
};

/// \brief Applies AWQ's scale search, folding and (optionally) clipping to block `layer` of
/// `model` in place, using `stats` gathered on that block's inputs. The fp32 model computes
/// the same function afterwards up to rounding and clipping; quantize its linears with RTN.
AwqLayerReport awq_transform_layer(Model& model, int layer, const BlockStats& stats,
                                   const QuantScheme& scheme, const AwqOptions& options);

}  // namespace nanoserve::quant
