#pragma once
/// \file
/// \brief Shared inputs of the chapter 5 tests: seeded random weights (Philox, via the
/// synthetic-model generator), small synthetic models with GQA or plain multi-head attention,
/// and random token sequences for calibrating them.

#include <cstdint>
#include <vector>

#include "common/loaders/synthetic_model.h"
#include "common/model.h"
#include "common/sampling/rng.h"

namespace nanoserve::testing {

/// \brief `n` weights uniform with standard deviation `std`, from Philox keyed by `seed`.
inline std::vector<float> random_weights(uint64_t seed, size_t n, float std = 1.0f) {
  std::vector<float> w(n);
  for (size_t i = 0; i < n; ++i) w[i] = synthetic_weight(seed, 900, i, std);
  return w;
}

/// \brief `random_weights` with every `every`-th element multiplied by `factor` (outliers that
/// stretch RTN's group ranges).
inline std::vector<float> weights_with_outliers(uint64_t seed, size_t n, size_t every, float factor) {
  std::vector<float> w = random_weights(seed, n);
  for (size_t i = 0; i < n; i += every) w[i] *= factor;
  return w;
}

/// \brief A small synthetic Llama: dim 64, hidden 96, 2 layers, 4 heads of 16, with
/// `n_kv_heads` KV heads (4: plain multi-head attention, 2: GQA), vocab 64, context 64.
inline Model small_model(int n_kv_heads, uint64_t seed = 11) {
  ModelConfig c;
  c.name = "small";
  c.dim = 64;
  c.hidden_dim = 96;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = n_kv_heads;
  c.head_dim = 16;
  c.vocab_size = 64;
  c.max_seq_len = 64;
  c.tied_classifier = false;
  return make_synthetic_model(c, seed);
}

/// \brief `count` sequences of `length` random token ids in [0, vocab), BOS-free.
inline std::vector<std::vector<int>> random_sequences(uint64_t seed, int count, int length,
                                                      int vocab) {
  std::vector<std::vector<int>> seqs(static_cast<size_t>(count), std::vector<int>(size_t(length)));
  for (int s = 0; s < count; ++s) {
    for (int t = 0; t < length; ++t) {
      seqs[size_t(s)][size_t(t)] = int(random_bits(seed, uint64_t(s) * 4096 + uint64_t(t),
                                                   RngStream::kWorkload)[0] % uint32_t(vocab));
    }
  }
  return seqs;
}

}  // namespace nanoserve::testing
