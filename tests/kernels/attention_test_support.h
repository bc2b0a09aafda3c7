#pragma once
/// \file
/// \brief Shared by the attention kernel tests: a KV cache in the storage type whose unused rows
/// hold NaN (so a kernel that reads past a sequence's length cannot pass), and the oracle's
/// answer for one sequence computed from exactly the stored values.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/oracle/attention.h"
#include "kernels/attention.h"
#include "tests/kernels/kernel_oracle_support.h"

namespace nanoserve::testing {

/// \brief A host KV cache `(batch, max_seq_len, n_kv_heads, head_dim)` for K and V.
template <typename T>
struct HostKvCache {
  std::vector<T> k;  ///< (batch, max_seq_len, kv_dim)
  std::vector<T> v;  ///< (batch, max_seq_len, kv_dim)
  int max_seq_len = 0;  ///< rows per sequence
  int kv_dim = 0;       ///< n_kv_heads * head_dim

  /// \brief Rows `0 .. n - 1` of sequence `b`'s keys (or values), widened to fp32.
  std::vector<float> rows(const std::vector<T>& cache, int b, int n) const {
    const std::size_t begin = std::size_t(b) * max_seq_len * kv_dim;
    return to_floats(std::vector<T>(cache.begin() + begin,
                                    cache.begin() + begin + std::size_t(n) * kv_dim));
  }
};

/// \brief Random K and V for `lens[b]` rows of each sequence, rounded to T; every other row is
/// NaN.
template <typename T>
HostKvCache<T> make_kv_cache(std::uint64_t seed, const std::vector<int>& lens, int max_seq_len,
                             int kv_dim) {
  HostKvCache<T> cache;
  cache.max_seq_len = max_seq_len;
  cache.kv_dim = kv_dim;
  const std::size_t n = lens.size() * std::size_t(max_seq_len) * kv_dim;
  cache.k = to_storage<T>(random_values(seed, 1, n, 1.0f));
  cache.v = to_storage<T>(random_values(seed, 2, n, 1.0f));
  for (std::size_t b = 0; b < lens.size(); ++b) {
    for (int j = lens[b] < 0 ? 0 : lens[b]; j < max_seq_len; ++j) {
      for (int i = 0; i < kv_dim; ++i) {
        const std::size_t at = (b * max_seq_len + j) * kv_dim + i;
        cache.k[at] = from_float<T>(NAN);
        cache.v[at] = from_float<T>(NAN);
      }
    }
  }
  return cache;
}

/// \brief A short description of a head layout for failure messages.
inline std::string describe(const AttentionHeads& h) {
  return "heads=" + std::to_string(h.n_heads) + "/" + std::to_string(h.n_kv_heads) +
         " head_dim=" + std::to_string(h.head_dim);
}

/// \brief The oracle's shape for the same layout.
inline oracle::AttentionShape oracle_shape(const AttentionHeads& h) {
  oracle::AttentionShape s;
  s.n_heads = h.n_heads;
  s.n_kv_heads = h.n_kv_heads;
  s.head_dim = h.head_dim;
  return s;
}

}  // namespace nanoserve::testing
