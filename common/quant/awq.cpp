#include "common/quant/awq.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "common/error.h"
#include "common/quant/quantized_model.h"
#include "common/quant/rtn.h"

namespace nanoserve::quant {

namespace {

/// s = max(mean|x|^α, 1e-4), normalized by sqrt(max(s) · min(s)) (the reference's rule).
std::vector<float> scales_for_alpha(const Eigen::VectorXd& mean_abs, double alpha) {
  // BEGIN EXERCISE ch05.3 "AWQ: per-channel scales from activation magnitudes" points=15 minutes=25
  // HINT: s_c = max(mean_abs_c ^ alpha, 1e-4), then divide every s_c by sqrt(max(s) * min(s))
  // HINT: so the scales centre on 1 (Lin et al. 2024, section 3.2; the reference's rule).
  // STUB: (void)alpha;
  // STUB: return std::vector<float>(size_t(mean_abs.size()), 1.0f);  // no scaling
  Eigen::VectorXd s(mean_abs.size());
  for (Eigen::Index c = 0; c < s.size(); ++c) s[c] = std::max(std::pow(mean_abs[c], alpha), 1e-4);
  s /= std::sqrt(s.maxCoeff() * s.minCoeff());
  std::vector<float> out(size_t(s.size()));
  for (Eigen::Index c = 0; c < s.size(); ++c) out[size_t(c)] = float(s[c]);
  return out;
  // END EXERCISE
}

/// Output error of Q(W · diag(s)) · diag(s)⁻¹ against W.
double scaled_rtn_error(const LinearView& lin, int cols, const std::vector<float>& s,
                        const Eigen::MatrixXd& gram, const QuantScheme& scheme) {
  std::vector<float> ws(lin.data, lin.data + int64_t(lin.rows) * cols);  // (rows, cols)
  for (int r = 0; r < lin.rows; ++r) {
    for (int c = 0; c < cols; ++c) ws[size_t(int64_t(r) * cols + c)] *= s[size_t(c)];
  }
  std::vector<float> w_hat = fake_quantize_rtn(ws.data(), lin.rows, cols, scheme);
  for (int r = 0; r < lin.rows; ++r) {
    for (int c = 0; c < cols; ++c) w_hat[size_t(int64_t(r) * cols + c)] /= s[size_t(c)];
  }
  return output_error(lin.data, w_hat.data(), lin.rows, gram);
}

/// G' = diag(1/s) G diag(1/s): the Gram matrix of the inputs x / s.
Eigen::MatrixXd scaled_gram(const Eigen::MatrixXd& gram, const std::vector<float>& s) {
  Eigen::VectorXd inv(gram.cols());
  for (Eigen::Index c = 0; c < inv.size(); ++c) inv[c] = 1.0 / double(s[size_t(c)]);
  return inv.asDiagonal() * gram * inv.asDiagonal();
}

}  // namespace

AwqScaleResult awq_search_scales(const std::vector<LinearView>& linears, const InputStats& stats,
                                 const QuantScheme& scheme, int n_grid) {
  if (n_grid < 1) throw InvalidArgument("awq: n_grid " + std::to_string(n_grid) + " < 1");
  const int cols = int(stats.gram.cols());
  const Eigen::VectorXd mean_abs = stats.mean_abs();
  AwqScaleResult best;
  best.error = std::numeric_limits<double>::infinity();
  for (int i = 0; i < n_grid; ++i) {
    const double alpha = double(i) / n_grid;
    std::vector<float> s = scales_for_alpha(mean_abs, alpha);
    double error = 0;
    for (const LinearView& lin : linears) error += scaled_rtn_error(lin, cols, s, stats.gram, scheme);
    if (i == 0) best.rtn_error = error;
    if (error < best.error) {  // strict: ties keep the smaller α
      best.error = error;
      best.alpha = alpha;
      best.scales = std::move(s);
    }
  }
  return best;
}

void fold_scales_into_norm(std::vector<float>& norm, const std::vector<std::vector<float>*>& linears,
                           const std::vector<float>& s) {
  const size_t cols = s.size();
  if (norm.size() != cols) throw InvalidArgument("fold_scales_into_norm: norm/scale size mismatch");
  for (size_t c = 0; c < cols; ++c) norm[c] /= s[c];
  for (std::vector<float>* w : linears) {
    if (w->size() % cols != 0) throw InvalidArgument("fold_scales_into_norm: linear width mismatch");
    for (size_t i = 0; i < w->size(); ++i) (*w)[i] *= s[i % cols];
  }
}

void fold_scales_into_linear(std::vector<float>& prev, std::vector<float>& next,
                             const std::vector<float>& s) {
  const size_t n = s.size();
  if (prev.size() % n != 0 || next.size() % n != 0) {
    throw InvalidArgument("fold_scales_into_linear: shapes do not match the scales");
  }
  const size_t prev_cols = prev.size() / n;
  for (size_t i = 0; i < prev.size(); ++i) prev[i] /= s[i / prev_cols];  // row i / prev_cols
  for (size_t i = 0; i < next.size(); ++i) next[i] *= s[i % n];           // column i % n
}

int awq_clip(std::vector<float>& w, int rows, const Eigen::MatrixXd& gram,
             const QuantScheme& scheme, const AwqOptions& options) {
  const int cols = int(gram.cols());
  const int width = scheme.group_width(cols);
  const int steps = int(options.max_shrink * options.clip_grid);
  std::vector<float> clamped(static_cast<size_t>(width));  // (width) one clamped group
  int clipped = 0;
  for (int r = 0; r < rows; ++r) {
    float* row = w.data() + int64_t(r) * cols;  // (cols)
    for (int g0 = 0; g0 < cols; g0 += width) {
      const int n = std::min(width, cols - g0);
      const auto block = gram.block(g0, g0, n, n);  // this group's inputs only, as the reference
      float amax = 0;
      for (int k = 0; k < n; ++k) amax = std::max(amax, std::fabs(row[g0 + k]));
      if (amax == 0) continue;
      double best_error = std::numeric_limits<double>::infinity();
      float best_max = amax;
      for (int i = 0; i < steps; ++i) {
        const float m = amax * float(1.0 - double(i) / options.clip_grid);
        for (int k = 0; k < n; ++k) clamped[size_t(k)] = std::clamp(row[g0 + k], -m, m);
        const GroupParams p = choose_group_params(clamped.data(), n, scheme);
        Eigen::VectorXd d(n);  // quantized clamped group − original group
        for (int k = 0; k < n; ++k) {
          d[k] = double(dequantize_code(quantize_code(clamped[size_t(k)], p, scheme.max_code()), p)) -
                 double(row[g0 + k]);
        }
        const double error = d.dot(block * d);
        if (error < best_error) {
          best_error = error;
          best_max = m;
        }
      }
      if (best_max < amax) {
        ++clipped;
        for (int k = 0; k < n; ++k) row[g0 + k] = std::clamp(row[g0 + k], -best_max, best_max);
      }
    }
  }
  return clipped;
}

AwqLayerReport awq_transform_layer(Model& model, int layer, const BlockStats& stats,
                                   const QuantScheme& scheme, const AwqOptions& options) {
  const ModelConfig& c = model.config;
  LayerWeights& w = model.layers[size_t(layer)];
  using LI = oracle::LinearInput;
  auto view = [&](LinearId id) {
    return LinearView{linear_weights(w, id).data(), linear_rows(c, id)};
  };
  AwqLayerReport report;
  // Each input's statistics for clipping, updated as scales divide that input.
  Eigen::MatrixXd gram_attn = stats[LI::kAttention].gram, gram_ffn = stats[LI::kFfn].gram;
  Eigen::MatrixXd gram_attn_out = stats[LI::kAttentionOut].gram;
  Eigen::MatrixXd gram_hidden = stats[LI::kFfnHidden].gram;

  // attn_norm → wq, wk, wv
  AwqScaleResult r = awq_search_scales({view(LinearId::kWq), view(LinearId::kWk), view(LinearId::kWv)},
                                       stats[LI::kAttention], scheme, options.n_grid);
  fold_scales_into_norm(w.attn_norm, {&w.wq, &w.wk, &w.wv}, r.scales);
  gram_attn = scaled_gram(gram_attn, r.scales);
  report.alpha_qkv = r.alpha;
  report.input_scales[size_t(LI::kAttention)] = r.scales;

  // wv → wo, only without GQA (see the file comment).
  if (c.q_dim() == c.kv_dim()) {
    r = awq_search_scales({view(LinearId::kWo)}, stats[LI::kAttentionOut], scheme, options.n_grid);
    fold_scales_into_linear(w.wv, w.wo, r.scales);
    gram_attn_out = scaled_gram(gram_attn_out, r.scales);
    report.alpha_wo = r.alpha;
    report.input_scales[size_t(LI::kAttentionOut)] = r.scales;
  }

  // ffn_norm → w1, w3
  r = awq_search_scales({view(LinearId::kW1), view(LinearId::kW3)}, stats[LI::kFfn], scheme,
                        options.n_grid);
  fold_scales_into_norm(w.ffn_norm, {&w.w1, &w.w3}, r.scales);
  gram_ffn = scaled_gram(gram_ffn, r.scales);
  report.alpha_w13 = r.alpha;
  report.input_scales[size_t(LI::kFfn)] = r.scales;

  // w3 → w2: h = silu(w1 x) · (w3 x) is linear in w3's output.
  r = awq_search_scales({view(LinearId::kW2)}, stats[LI::kFfnHidden], scheme, options.n_grid);
  fold_scales_into_linear(w.w3, w.w2, r.scales);
  gram_hidden = scaled_gram(gram_hidden, r.scales);
  report.alpha_w2 = r.alpha;
  report.input_scales[size_t(LI::kFfnHidden)] = r.scales;

  if (options.clip) {
    report.clipped_groups += awq_clip(w.wv, c.kv_dim(), gram_attn, scheme, options);
    report.clipped_groups += awq_clip(w.wo, c.dim, gram_attn_out, scheme, options);
    report.clipped_groups += awq_clip(w.w1, c.hidden_dim, gram_ffn, scheme, options);
    report.clipped_groups += awq_clip(w.w3, c.hidden_dim, gram_ffn, scheme, options);
    report.clipped_groups += awq_clip(w.w2, c.dim, gram_hidden, scheme, options);
  }
  return report;
}

}  // namespace nanoserve::quant
