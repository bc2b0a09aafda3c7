#pragma once
/// \file
/// \brief Shared by the paged attention tests: a batch of sequences whose K/V live in a paged
/// pool with deliberately shuffled physical blocks, NaN in every slot no sequence owns (the
/// tail of each last block, unused blocks) and -1 in every unused table entry — plus the same
/// data as a contiguous cache, so each paged kernel is checked against the oracle and against
/// the contiguous kernels of chapter 1 on identical values.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "common/oracle/attention.h"
#include "common/sampling/rng.h"
#include "kernels/device_buffer.h"
#include "kernels/paged_attention.h"
#include "tests/kernels/attention_test_support.h"
#include "tests/kernels/kernel_oracle_support.h"

namespace nanoserve::testing {

/// \brief `[0, n)` in a seeded random order (Fisher-Yates over the project's Philox RNG).
inline std::vector<int> seeded_permutation(std::uint64_t seed, int n) {
  std::vector<int> p(static_cast<std::size_t>(n));
  std::iota(p.begin(), p.end(), 0);
  for (int i = n - 1; i > 0; --i) {
    const double u = uniform01(seed, 99, RngStream::kWeights, static_cast<std::uint32_t>(i));
    std::swap(p[static_cast<std::size_t>(i)],
              p[static_cast<std::size_t>(std::min(i, static_cast<int>(u * (i + 1))))]);
  }
  return p;
}

/// \brief A batch in a host paged pool, and the same keys/values contiguous.
template <typename T>
struct HostPagedKv {
  int block_size = 0;             ///< tokens per block
  int num_blocks = 0;             ///< physical blocks in the pool
  int max_blocks_per_seq = 0;     ///< table row length
  std::vector<int> context_lens;  ///< (batch)
  std::vector<int> block_tables;  ///< (batch, max_blocks_per_seq), -1 past each sequence's blocks
  std::vector<T> k_pool;          ///< (num_blocks, block_size, kv_dim), NaN where unowned
  std::vector<T> v_pool;          ///< (num_blocks, block_size, kv_dim), NaN where unowned
  HostKvCache<T> contiguous;      ///< (batch, max_blocks_per_seq * block_size, kv_dim)

  /// \brief Rows of the contiguous view: max_blocks_per_seq * block_size.
  int max_context() const { return max_blocks_per_seq * block_size; }
};

/// \brief Random K/V for `lens[b]` tokens of each sequence, in blocks of `block_size`
/// scattered over a pool of all needed blocks plus `spare_blocks`, the physical ids a seeded
/// permutation of the pool. Lengths <= 0 own no block. Table rows have `spare_entries` more
/// entries than the longest sequence needs (left -1: never to be read).
template <typename T>
HostPagedKv<T> make_paged_kv(std::uint64_t seed, const std::vector<int>& lens, int block_size,
                             int kv_dim, int spare_blocks = 3, int spare_entries = 1) {
  HostPagedKv<T> p;
  p.block_size = block_size;
  p.context_lens = lens;
  std::vector<int> blocks_of(lens.size());
  int needed = 0, widest = 0;
  for (std::size_t b = 0; b < lens.size(); ++b) {
    blocks_of[b] = lens[b] <= 0 ? 0 : (lens[b] + block_size - 1) / block_size;
    needed += blocks_of[b];
    widest = std::max(widest, blocks_of[b]);
  }
  p.max_blocks_per_seq = std::max(widest + spare_entries, 1);
  p.num_blocks = needed + spare_blocks;
  p.contiguous = make_kv_cache<T>(seed, lens, p.max_context(), kv_dim);

  const std::vector<int> physical = seeded_permutation(seed, p.num_blocks);
  const std::size_t pool_size = std::size_t(p.num_blocks) * block_size * kv_dim;
  p.k_pool.assign(pool_size, from_float<T>(NAN));
  p.v_pool.assign(pool_size, from_float<T>(NAN));
  p.block_tables.assign(lens.size() * std::size_t(p.max_blocks_per_seq), -1);
  int next = 0;
  for (std::size_t b = 0; b < lens.size(); ++b) {
    for (int lb = 0; lb < blocks_of[b]; ++lb) {
      p.block_tables[b * p.max_blocks_per_seq + lb] = physical[std::size_t(next++)];
    }
    for (int j = 0; j < lens[b]; ++j) {  // slot = block_id * block_size + offset
      const int block = p.block_tables[b * p.max_blocks_per_seq + j / block_size];
      const std::size_t slot = std::size_t(block) * block_size + j % block_size;
      const std::size_t from = (b * p.max_context() + j) * kv_dim;
      std::copy_n(p.contiguous.k.begin() + from, kv_dim, p.k_pool.begin() + slot * kv_dim);
      std::copy_n(p.contiguous.v.begin() + from, kv_dim, p.v_pool.begin() + slot * kv_dim);
    }
  }
  return p;
}

/// \brief The device copy of a HostPagedKv and the views the launchers take.
template <typename T>
struct DevicePagedKv {
  DeviceBuffer<T> k_pool;          ///< (num_blocks, block_size, kv_dim)
  DeviceBuffer<T> v_pool;          ///< (num_blocks, block_size, kv_dim)
  DeviceBuffer<int> tables;        ///< (batch, max_blocks_per_seq)
  DeviceBuffer<int> lens;          ///< (batch)
  PagedKVView<T> kv;               ///< view of the pools
  DeviceBlockTables block_tables;  ///< view of the tables and lengths

  /// \brief Uploads `host`.
  explicit DevicePagedKv(const HostPagedKv<T>& host)
      : k_pool(host.k_pool),
        v_pool(host.v_pool),
        tables(host.block_tables),
        lens(host.context_lens) {
    kv = {k_pool.get(), v_pool.get(), host.num_blocks, host.block_size};
    block_tables = {tables.get(), lens.get(), int(host.context_lens.size()),
                    host.max_blocks_per_seq};
  }
};

/// \brief The oracle's answer for `q_lens[b]` queries of each sequence at positions
/// `lens[b] - q_lens[b] + i` (lengths clamped to the table's reach, as the kernels do),
/// rows packed sequence after sequence; queries at negative positions get zeros.
/// \param q (Σ q_lens, n_heads, head_dim) packed queries
template <typename T>
std::vector<float> oracle_paged(const std::vector<float>& q, const HostPagedKv<T>& p,
                                const std::vector<int>& q_lens, const AttentionHeads& heads) {
  const std::size_t q_row = std::size_t(heads.n_heads) * heads.head_dim;
  std::vector<float> want(q.size(), 0.0f);
  std::size_t row = 0;
  for (std::size_t b = 0; b < q_lens.size(); ++b) {
    const int ctx = std::clamp(p.context_lens[b], 0, p.max_context());
    for (int i = 0; i < q_lens[b]; ++i, ++row) {
      const int position = ctx - q_lens[b] + i;
      if (position < 0) continue;
      const int n_keys = position + 1;
      oracle::attention(q.data() + row * q_row, &position, 1,
                        p.contiguous.rows(p.contiguous.k, int(b), n_keys).data(),
                        p.contiguous.rows(p.contiguous.v, int(b), n_keys).data(), n_keys,
                        oracle_shape(heads), want.data() + row * q_row);
    }
  }
  return want;
}

/// \brief "block_size=16 lens=[1,15,…]" for failure messages.
inline std::string describe_batch(int block_size, const std::vector<int>& lens) {
  std::string s = "block_size=" + std::to_string(block_size) + " lens=[";
  for (std::size_t i = 0; i < lens.size(); ++i) s += (i ? "," : "") + std::to_string(lens[i]);
  return s + "]";
}

}  // namespace nanoserve::testing
