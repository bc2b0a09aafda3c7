// The oracle's forward pass against an independent fp64 transformer written here with plain
// loops straight from the equations (llama2.c `forward` / HF LlamaModel), sharing no code with
// common/oracle/.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "common/oracle/forward.h"
#include "common/tolerances.h"
#include "oracle_test_models.h"

namespace nanoserve::oracle {
namespace {

using nanoserve::testing::random_model;
using nanoserve::testing::tiny_config;
using Vec = std::vector<double>;

Vec rmsnorm64(const Vec& x, const std::vector<float>& g, double eps) {
  double ss = 0;
  for (double v : x) ss += v * v;
  const double inv = 1.0 / std::sqrt(ss / double(x.size()) + eps);
  Vec out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = x[i] * inv * g[i];
  return out;
}

Vec linear64(const std::vector<float>& w, const Vec& x) {  // w (out, in) row-major, y = W x
  Vec y(w.size() / x.size(), 0.0);
  for (size_t o = 0; o < y.size(); ++o) {
    for (size_t i = 0; i < x.size(); ++i) y[o] += double(w[o * x.size() + i]) * x[i];
  }
  return y;
}

void rope64(Vec& x, int n_heads, int hd, int pos, double theta, RopeStyle style) {
  for (int h = 0; h < n_heads; ++h) {
    for (int i = 0; i < hd / 2; ++i) {
      const int a = h * hd + (style == RopeStyle::kAdjacentPairs ? 2 * i : i);
      const int b = h * hd + (style == RopeStyle::kAdjacentPairs ? 2 * i + 1 : i + hd / 2);
      const double phi = pos * std::pow(theta, -2.0 * i / hd);
      const double xa = x[a], xb = x[b];
      x[a] = xa * std::cos(phi) - xb * std::sin(phi);
      x[b] = xa * std::sin(phi) + xb * std::cos(phi);
    }
  }
}

// Logits (T, vocab) of `tokens` from position 0, one token at a time with a growing cache.
std::vector<double> naive_forward(const Model& m, const std::vector<int>& tokens) {
  const ModelConfig& c = m.config;
  const int hd = c.head_dim, group = c.n_heads / c.n_kv_heads;
  std::vector<std::vector<Vec>> keys(c.n_layers), values(c.n_layers);  // [layer][pos] (kv_dim)
  std::vector<double> logits;
  for (int pos = 0; pos < int(tokens.size()); ++pos) {
    Vec x(m.token_embedding.begin() + size_t(tokens[pos]) * c.dim,
          m.token_embedding.begin() + size_t(tokens[pos] + 1) * c.dim);
    for (int l = 0; l < c.n_layers; ++l) {
      const LayerWeights& w = m.layers[l];
      const Vec xn = rmsnorm64(x, w.attn_norm, c.norm_eps);
      Vec q = linear64(w.wq, xn), k = linear64(w.wk, xn);
      rope64(q, c.n_heads, hd, pos, c.rope_theta, c.rope_style);
      rope64(k, c.n_kv_heads, hd, pos, c.rope_theta, c.rope_style);
      keys[l].push_back(k);
      values[l].push_back(linear64(w.wv, xn));
      Vec att(size_t(c.n_heads) * hd, 0.0);
      for (int h = 0; h < c.n_heads; ++h) {
        const int g = h / group;
        Vec s(pos + 1);
        double sum = 0;
        for (int j = 0; j <= pos; ++j) {
          double d = 0;
          for (int i = 0; i < hd; ++i) d += q[h * hd + i] * keys[l][j][g * hd + i];
          s[j] = std::exp(d / std::sqrt(double(hd)));  // tiny model: no overflow risk
          sum += s[j];
        }
        for (int j = 0; j <= pos; ++j) {
          for (int i = 0; i < hd; ++i) att[h * hd + i] += s[j] / sum * values[l][j][g * hd + i];
        }
      }
      const Vec o = linear64(w.wo, att);
      for (int i = 0; i < c.dim; ++i) x[i] += o[i];
      const Vec xf = rmsnorm64(x, w.ffn_norm, c.norm_eps);
      Vec h1 = linear64(w.w1, xf);
      const Vec h3 = linear64(w.w3, xf);
      for (size_t i = 0; i < h1.size(); ++i) h1[i] = h1[i] / (1.0 + std::exp(-h1[i])) * h3[i];
      const Vec f = linear64(w.w2, h1);
      for (int i = 0; i < c.dim; ++i) x[i] += f[i];
    }
    const Vec out = linear64(m.classifier_weights(), rmsnorm64(x, m.final_norm, c.norm_eps));
    logits.insert(logits.end(), out.begin(), out.end());
  }
  return logits;
}

void expect_matches_naive(const Model& m, const std::vector<int>& tokens) {
  const std::vector<float> got32 = forward_prompt(m, tokens);
  const std::vector<double> got(got32.begin(), got32.end()), want = naive_forward(m, tokens);
  ASSERT_EQ(got.size(), want.size());
  const CloseResult r = allclose(got.data(), want.data(), got.size(), tol::kFp32Forward);
  EXPECT_TRUE(r.ok) << m.config.name << " " << to_string(m.config.rope_style) << ": "
                    << r.summary();
}

const std::vector<int> kTokens = {1, 20, 3, 3, 36, 0, 11, 25, 7, 14, 2, 33};

TEST(OracleForwardNaive, MatchesFp64LoopsForGqaWithBothRopeStyles) {
  for (RopeStyle style : {RopeStyle::kAdjacentPairs, RopeStyle::kRotateHalf}) {
    ModelConfig c = tiny_config();
    c.rope_style = style;
    expect_matches_naive(random_model(c, 11), kTokens);
  }
}

TEST(OracleForwardNaive, MatchesFp64LoopsForTiedMqaModelWithOtherHyperParameters) {
  ModelConfig c = tiny_config();
  c.name = "test:mqa-tied";
  c.n_layers = 3;
  c.n_heads = 3;
  c.n_kv_heads = 1;
  c.head_dim = 6;  // q_dim 18 != dim 32
  c.hidden_dim = 17;
  c.rope_theta = 500.0f;
  c.norm_eps = 1e-2f;
  c.tied_classifier = true;
  expect_matches_naive(random_model(c, 12), kTokens);
}

}  // namespace
}  // namespace nanoserve::oracle
