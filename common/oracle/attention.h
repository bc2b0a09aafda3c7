#pragma once
/// \file
/// \brief Causal multi-head attention with grouped-query heads over a contiguous KV buffer,
/// the reference for the prefill and decode attention kernels.
///
/// For a query row at position `p` and query head `h`:
///
///     g        = h / (n_heads / n_kv_heads)             the KV head h reads (GQA group)
///     score[j] = q[h] · k[j][g] / sqrt(head_dim)         for keys j = 0 .. p (causal)
///     out[h]   = Σ_j softmax(score)[j] · v[j][g]
///
/// Key/value row j holds the token at position j, so a query sees exactly the keys at or
/// before its own position; later rows of `k`/`v` are never read (they may hold garbage).
/// n_kv_heads == n_heads is plain multi-head attention (Vaswani et al. 2017), n_kv_heads == 1
/// multi-query attention (Shazeer 2019), anything between grouped-query attention (Ainslie et
/// al. 2023).

namespace nanoserve::oracle {

/// \brief Shapes of one attention call.
struct AttentionShape {
  int n_heads = 0;     ///< query heads
  int n_kv_heads = 0;  ///< key/value heads; divides n_heads
  int head_dim = 0;    ///< values per head
};

/// \brief Causal GQA attention for `n_queries` rows, each at its own position.
/// \param q         (n_queries, n_heads, head_dim) rotated queries
/// \param positions (n_queries) position of each query; each in [0, n_keys) or
///                  `InvalidArgument` is thrown
/// \param n_queries number of query rows
/// \param k         (n_keys, n_kv_heads, head_dim) rotated keys, row j = position j
/// \param v         (n_keys, n_kv_heads, head_dim) values, row j = position j
/// \param n_keys    rows of `k` and `v` (at least max(positions) + 1)
/// \param shape     head counts and head width
/// \param out       (n_queries, n_heads, head_dim); must not alias the inputs
void attention(const float* q, const int* positions, int n_queries, const float* k,
               const float* v, int n_keys, const AttentionShape& shape, float* out);

}  // namespace nanoserve::oracle
