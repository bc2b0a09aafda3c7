// AWQ (common/quant/awq.h): α = 0 is RTN, folding is exact in fp32, the search returns the
// grid minimum of the output error computed independently from the input rows, and wo is
// scaled only without GQA.
#include <gtest/gtest.h>

#include <cmath>

#include "common/oracle/forward.h"
#include "common/quant/awq.h"
#include "common/quant/quantize_model.h"
#include "common/quant/rtn.h"
#include "common/tolerances.h"
#include "quant_test_support.h"

namespace nanoserve::quant {
namespace {

using RowMatrixF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// Positive per-channel scales in [0.5, 2).
std::vector<float> random_scales(uint64_t seed, int n) {
  std::vector<float> s = testing::random_weights(seed, size_t(n), 0.25f);
  for (float& x : s) x = std::exp2(2.0f * x);  // uniform exponent in about [-0.87, 0.87]
  return s;
}

void expect_same_logits(const Model& a, const Model& b, const std::vector<int>& tokens) {
  const std::vector<float> la = oracle::forward_prompt(a, tokens);
  const std::vector<float> lb = oracle::forward_prompt(b, tokens);
  const CloseResult r = allclose(lb, la, tol::kFp32Forward);
  EXPECT_TRUE(r.ok) << r.summary();
}

TEST(QuantAwq, FoldingScalesLeavesTheFp32ModelsOutputsUnchanged) {
  for (int kv_heads : {4, 2}) {  // plain multi-head attention, then GQA
    const Model m = testing::small_model(kv_heads);
    Model f = m;
    const ModelConfig& c = m.config;
    for (int l = 0; l < c.n_layers; ++l) {
      LayerWeights& w = f.layers[size_t(l)];
      fold_scales_into_norm(w.attn_norm, {&w.wq, &w.wk, &w.wv}, random_scales(100 + l, c.dim));
      fold_scales_into_norm(w.ffn_norm, {&w.w1, &w.w3}, random_scales(200 + l, c.dim));
      fold_scales_into_linear(w.w3, w.w2, random_scales(300 + l, c.hidden_dim));
      if (c.q_dim() == c.kv_dim()) fold_scales_into_linear(w.wv, w.wo, random_scales(400 + l, c.q_dim()));
    }
    EXPECT_NE(f.layers[0].wq, m.layers[0].wq);
    expect_same_logits(m, f, testing::random_sequences(5, 1, 40, c.vocab_size)[0]);
  }
}

TEST(QuantAwq, TransformWithoutClippingKeepsOutputsAndSkipsWoUnderGqa) {
  for (int kv_heads : {4, 2}) {
    const Model m = testing::small_model(kv_heads);
    const auto calib = testing::random_sequences(6, 4, 48, m.config.vocab_size);
    Model t = m;
    AwqOptions o;
    o.clip = false;
    for (int l = 0; l < m.config.n_layers; ++l) {
      const BlockStats stats = collect_block_stats(t, calib, l, l)[0];
      const AwqLayerReport r = awq_transform_layer(t, l, stats, {4, 32, true}, o);
      if (kv_heads == 2) {
        EXPECT_EQ(r.alpha_wo, -1.0) << "wo must not be scaled under GQA";
        EXPECT_TRUE(r.input_scales[size_t(oracle::LinearInput::kAttentionOut)].empty());
      } else {
        EXPECT_GE(r.alpha_wo, 0.0);
      }
      EXPECT_EQ(r.clipped_groups, 0);
    }
    expect_same_logits(m, t, testing::random_sequences(7, 1, 40, m.config.vocab_size)[0]);
  }
}

TEST(QuantAwq, AlphaZeroEqualsRtn) {
  const Model m = testing::small_model(2);
  const auto calib = testing::random_sequences(8, 3, 32, m.config.vocab_size);
  QuantizeOptions o;
  o.scheme = {4, 32, false};
  o.awq.n_grid = 1;  // the grid {0}
  o.awq.clip = false;
  o.method = QuantMethod::kAwq;
  const QuantizedModel awq = quantize_model(m, calib, o);
  o.method = QuantMethod::kRtn;
  const QuantizedModel rtn = quantize_model(m, calib, o);
  for (int l = 0; l < m.config.n_layers; ++l) {
    EXPECT_EQ(awq.base.layers[size_t(l)].attn_norm, m.layers[size_t(l)].attn_norm);
    for (LinearId id : kLinearIds) {
      EXPECT_EQ(awq.layers[size_t(l)][id].qweight, rtn.layers[size_t(l)][id].qweight) << to_string(id);
      EXPECT_EQ(awq.layers[size_t(l)][id].scales, rtn.layers[size_t(l)][id].scales) << to_string(id);
      EXPECT_EQ(awq.layers[size_t(l)][id].zeros, rtn.layers[size_t(l)][id].zeros) << to_string(id);
    }
  }
}

TEST(QuantAwq, SearchReturnsTheGridMinimumOfTheOutputError) {
  // Inputs with a few salient channels (10-30x the others), the case AWQ is made for.
  const int rows = 24, cols = 64, n = 256;
  RowMatrixF x = Eigen::Map<const RowMatrixF>(testing::random_weights(71, size_t(n * cols)).data(), n, cols);
  for (int c : {3, 17, 40}) x.col(c) *= 10.0f + float(c) / 2;
  InputStats stats(cols);
  stats.add(x.data(), n);
  const std::vector<float> w = testing::random_weights(72, size_t(rows * cols));
  const QuantScheme scheme{4, 32, true};
  const AwqScaleResult r = awq_search_scales({{w.data(), rows}}, stats, scheme, 20);

  // Independently: the error of every α on the rows themselves, ‖(W − Ŵ) Xᵀ‖².
  const Eigen::VectorXd mean_abs = x.cast<double>().cwiseAbs().colwise().mean().transpose();
  double best = 1e300, best_alpha = -1;
  for (int i = 0; i < 20; ++i) {
    Eigen::VectorXd s = mean_abs.array().pow(i / 20.0).max(1e-4);
    s /= std::sqrt(s.maxCoeff() * s.minCoeff());
    std::vector<float> ws = w;
    for (int k = 0; k < rows * cols; ++k) ws[size_t(k)] *= float(s[k % cols]);
    std::vector<float> wq = fake_quantize_rtn(ws.data(), rows, cols, scheme);
    for (int k = 0; k < rows * cols; ++k) wq[size_t(k)] /= float(s[k % cols]);
    const Eigen::MatrixXd delta = (Eigen::Map<const RowMatrixF>(w.data(), rows, cols) -
                                   Eigen::Map<const RowMatrixF>(wq.data(), rows, cols)).cast<double>();
    const double err = (delta * x.cast<double>().transpose()).squaredNorm();
    if (i == 0) {
      EXPECT_NEAR(r.rtn_error, err, 1e-6 * err);
    }
    if (err < best) best = err, best_alpha = i / 20.0;
  }
  EXPECT_EQ(r.alpha, best_alpha);
  EXPECT_NEAR(r.error, best, 1e-6 * best);
  EXPECT_GT(r.alpha, 0.0);
  EXPECT_LT(r.error, r.rtn_error);
  double max_s = 0, min_s = 1e300;
  for (float s : r.scales) max_s = std::max(max_s, double(s)), min_s = std::min(min_s, double(s));
  EXPECT_NEAR(max_s * min_s, 1.0, 1e-5);  // normalized as the reference does
}

TEST(QuantAwq, ClippingShrinksAGroupOnlyWhenThatLowersItsError) {
  // Row 0: one outlier weight whose input is nearly silent -> clipping it helps the others.
  // Row 1: integers -7..7, exactly on the full range's grid (s = 1) -> any shrink adds error.
  const int cols = 32;
  std::vector<float> w = testing::random_weights(81, size_t(2 * cols));
  w[5] = 20.0f;
  for (int c = 0; c < cols; ++c) w[size_t(cols + c)] = float(c % 15 - 7);
  Eigen::MatrixXd gram = Eigen::MatrixXd::Identity(cols, cols);
  gram(5, 5) = 1e-6;
  const std::vector<float> before = w;
  AwqOptions o;
  EXPECT_EQ(awq_clip(w, 2, gram, {4, 32, true}, o), 1);
  EXPECT_LT(w[5], 20.0f);
  EXPECT_GE(w[5], 10.0f);  // shrunk by less than max_shrink = 0.5
  for (int c = 0; c < cols; ++c) EXPECT_EQ(w[size_t(cols + c)], before[size_t(cols + c)]);
}

}  // namespace
}  // namespace nanoserve::quant
