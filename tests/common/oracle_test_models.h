#pragma once
/// \file
/// \brief Small hand-built random models for the oracle, sampler and eval tests, filled from
/// the project's Philox RNG so every test sees the same weights on every machine.

#include <cmath>
#include <cstdint>
#include <vector>

#include "common/model.h"
#include "common/sampling/rng.h"

namespace nanoserve::testing {

/// \brief `n` values uniform in [-scale, scale), tensor `tensor_id` of weights `seed`.
inline std::vector<float> random_tensor(uint64_t seed, uint64_t tensor_id, size_t n,
                                        float scale, float offset = 0.0f) {
  std::vector<float> t(n);
  for (size_t i = 0; i < n; ++i) {
    const double u = uniform01(seed, tensor_id, RngStream::kWeights, uint32_t(i));
    t[i] = offset + scale * float(2.0 * u - 1.0);
  }
  return t;
}

/// \brief A tiny config: 2 layers, 4 query heads over 2 KV heads (GQA), head_dim 8.
inline ModelConfig tiny_config() {
  ModelConfig c;
  c.name = "test:tiny";
  c.dim = 32;
  c.hidden_dim = 48;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 8;
  c.vocab_size = 37;
  c.max_seq_len = 64;
  c.rope_theta = 10000.0f;
  c.norm_eps = 1e-5f;
  c.tied_classifier = false;
  return c;
}

/// \brief A model of shape `c` with uniform weights scaled by 1/sqrt(fan_in), so that
/// activations stay O(1) through the layers and the logits are far from flat; norm gains are
/// near 1. Validated before it is returned.
inline Model random_model(const ModelConfig& c, uint64_t seed) {
  Model m;
  m.config = c;
  m.source = "random_model";
  uint64_t id = 0;
  auto linear = [&](int rows, int cols) {
    return random_tensor(seed, id++, size_t(rows) * cols, 1.0f / std::sqrt(float(cols)));
  };
  auto gain = [&](int n) { return random_tensor(seed, id++, size_t(n), 0.2f, 1.0f); };
  m.token_embedding = random_tensor(seed, id++, size_t(c.vocab_size) * c.dim, 1.0f);
  for (int l = 0; l < c.n_layers; ++l) {
    LayerWeights w;
    w.attn_norm = gain(c.dim);
    w.wq = linear(c.q_dim(), c.dim);
    w.wk = linear(c.kv_dim(), c.dim);
    w.wv = linear(c.kv_dim(), c.dim);
    w.wo = linear(c.dim, c.q_dim());
    w.ffn_norm = gain(c.dim);
    w.w1 = linear(c.hidden_dim, c.dim);
    w.w2 = linear(c.dim, c.hidden_dim);
    w.w3 = linear(c.hidden_dim, c.dim);
    m.layers.push_back(std::move(w));
  }
  m.final_norm = gain(c.dim);
  if (!c.tied_classifier) m.classifier = linear(c.vocab_size, c.dim);
  m.validate();
  return m;
}

}  // namespace nanoserve::testing
