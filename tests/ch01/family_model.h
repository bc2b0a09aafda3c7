#pragma once
/// \file
/// \brief A small random model with the features of real checkpoint families (Qwen2's q/k/v
/// biases, GQA, rotate-half RoPE, any rope_scaling) for the device forward-pass tests.

#include <random>
#include <vector>

#include "common/loaders/synthetic_model.h"
#include "common/model.h"

namespace nanoserve::engine {

/// \brief A random 2-layer GQA model; with `biases`, Qwen2's q/k/v biases (seeded uniform
/// values).
inline Model family_model(bool biases, RopeScaling scaling) {
  ModelConfig c;
  c.name = biases ? "qwen2-like" : "llama3-like";
  c.architecture = biases ? "qwen2" : "llama";
  c.dim = 64, c.hidden_dim = 96, c.n_layers = 2, c.n_heads = 4, c.n_kv_heads = 2;
  c.head_dim = 16, c.vocab_size = 80, c.max_seq_len = 64;
  c.rope_theta = biases ? 1e6f : 500000.0f;
  c.rope_style = RopeStyle::kRotateHalf;
  c.rope_scaling = scaling;
  c.tied_classifier = biases;
  Model m = make_synthetic_model(c, 11);
  m.config.attention_bias = biases;
  if (biases) {
    std::mt19937_64 rng(5);
    std::uniform_real_distribution<float> u(-0.5f, 0.5f);
    auto draw = [&](int n) {
      std::vector<float> v(static_cast<std::size_t>(n));
      for (float& x : v) x = u(rng);
      return v;
    };
    for (LayerWeights& w : m.layers) {
      w.bq = draw(c.q_dim());
      w.bk = draw(c.kv_dim());
      w.bv = draw(c.kv_dim());
    }
  }
  m.validate();
  return m;
}

}  // namespace nanoserve::engine
