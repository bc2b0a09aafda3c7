#pragma once
/// \file
/// \brief Rotary position embedding (RoPE; Su et al., "RoFormer", 2021) in both pairing
/// conventions, the reference for the RoPE kernels.
///
/// A head of `head_dim` values is split into `head_dim / 2` pairs; pair i is rotated by the
/// angle `pos * theta^(-2i / head_dim)`:
///
///     (a, b) -> (a cos φ - b sin φ,  a sin φ + b cos φ)
///
/// The conventions differ only in *which* two values form pair i (see `RopeStyle`):
///
///     head_dim = 8     pair:  0      1      2      3
///     adjacent pairs        (x0,x1) (x2,x3) (x4,x5) (x6,x7)    llama2.c, GGUF llama
///     rotate half           (x0,x4) (x1,x5) (x2,x6) (x3,x7)    Hugging Face, GPT-NeoX
///
/// so a rotate-half model equals an adjacent-pairs model whose wq/wk rows are permuted within
/// each head — which is exactly how converters (llama.cpp's `convert_hf_to_gguf.py`) move a
/// checkpoint between the two.
///
/// The angle is computed in fp32, `float(pos) * (1 / theta^(2i/head_dim))`, as both llama2.c
/// and Hugging Face compute it: those are the numbers the real checkpoints were validated with,
/// and the ones a kernel computes too.

#include "common/model_config.h"

namespace nanoserve::oracle {

/// \brief The rotation frequency of pair `pair` of a head: `theta^(-2 pair / head_dim)` (fp32).
/// \param pair     pair index in [0, head_dim / 2)
/// \param head_dim values per head
/// \param theta    RoPE base
float rope_frequency(int pair, int head_dim, float theta);

/// \brief Rotates every head of every row in place by that row's position.
/// \param x         (n_rows, n_heads, head_dim) queries or keys, updated in place
/// \param positions (n_rows) the token position of each row (>= 0)
/// \param n_heads   heads per row: `n_heads` for queries, `n_kv_heads` for keys
/// \param n_rows    number of rows (tokens)
/// \param head_dim  values per head (even)
/// \param theta     RoPE base (`ModelConfig::rope_theta`)
/// \param style     which values form a pair
void rope(float* x, const int* positions, int n_rows, int n_heads, int head_dim, float theta,
          RopeStyle style);

/// \brief The same rotation with pair i turning at `inv_freq[i]` radians per position: the
/// table of `rope_frequencies(config)` (common/rope_frequencies.h), which applies the model's
/// `rope_scaling`.
/// \param x         (n_rows, n_heads, head_dim) queries or keys, updated in place
/// \param positions (n_rows) the token position of each row (>= 0)
/// \param n_rows    number of rows (tokens)
/// \param n_heads   heads per row
/// \param head_dim  values per head (even)
/// \param inv_freq  (head_dim / 2) the frequency of each pair
/// \param style     which values form a pair
void rope(float* x, const int* positions, int n_rows, int n_heads, int head_dim,
          const float* inv_freq, RopeStyle style);

}  // namespace nanoserve::oracle
