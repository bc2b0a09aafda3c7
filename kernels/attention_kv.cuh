#pragma once
/// \file
/// \brief The two policies every attention kernel is written over, so that each kernel idea
/// exists once and is instantiated for the contiguous cache of chapter 1 and the paged pool of
/// chapter 2:
///
/// - **KV addressing** — where key j of sequence b lives: `ContiguousKV` (row
///   `b * max_seq_len + j` of a per-sequence cache) or `PagedKV` (slot
///   `block_tables[b][j / block_size] * block_size + j % block_size` of a pool, through
///   paged_slot()). Either way the element is `k_cache[(row * n_kv_heads + g) * head_dim + e]`,
///   and a row of -1 (a paged table entry outside the pool) is read as NaN.
/// - **Query ranges** — which rows of the packed `q`/`out` belong to sequence b and at which
///   positions: `FixedQueries` (decode: q_len per sequence, the newest tokens),
///   `ChunkQueries` (one sequence's chunk at a host-known start: contiguous prefill) and
///   `VarlenQueries` (cu_seqlens prefix sums: batched varlen paged prefill).
///
/// Lengths and tables are device data, so the policies clamp instead of trusting them: a
/// context is clamped to `[0, max_context]`, and a query at a negative position sees no key.

#include <cstdint>
#include <string>

#include "kernels/attention.h"
#include "kernels/cuda_compat.h"
#include "kernels/kernel_args.h"
#include "kernels/paged_attention.h"
#include "kernels/paged_kv.cuh"

namespace nanoserve {

/// \brief Contiguous cache `(batch, max_seq_len, n_kv_heads, head_dim)`: key j of sequence b
/// is row `b * max_seq_len + j`.
struct ContiguousKV {
  int max_seq_len = 0;  ///< rows per sequence

  /// \brief The rows of one sequence.
  struct Seq {
    std::int64_t first;  ///< row of key 0
    /// \brief Cache row of key `j` (never -1).
    __device__ __forceinline__ std::int64_t row(int j) const { return first + j; }
  };
  /// \brief Keys a sequence can hold.
  __host__ __device__ __forceinline__ int max_context() const { return max_seq_len; }
  /// \brief Sequence `b`'s rows.
  __device__ __forceinline__ Seq seq(int b) const {
    return {static_cast<std::int64_t>(b) * max_seq_len};
  }
};

/// \brief Paged pool `(num_blocks, block_size, n_kv_heads, head_dim)` with per-sequence block
/// tables (kernels/paged_attention.h): key j of sequence b is its paged_slot().
struct PagedKV {
  const int* block_tables = nullptr;  ///< (batch, max_blocks) physical block ids
  int max_blocks = 0;                 ///< table row length
  FastDivmod block_size;              ///< tokens per block, as a multiply-high divisor
  int num_blocks = 0;                 ///< blocks in the pool

  /// \brief The rows of one sequence: its table row.
  struct Seq {
    const int* table;        ///< (max_blocks) physical block ids
    FastDivmod block_size;   ///< tokens per block
    int num_blocks;          ///< blocks in the pool
    /// \brief Cache row (slot) of key `j`, or -1 when its block id is outside the pool.
    __device__ __forceinline__ std::int64_t row(int j) const {
      return paged_slot(table, block_size, num_blocks, j);
    }
  };
  /// \brief Keys a sequence's table row can address.
  __host__ __device__ __forceinline__ int max_context() const {
    return max_blocks * block_size.divisor;
  }
  /// \brief Sequence `b`'s table row.
  __device__ __forceinline__ Seq seq(int b) const {
    return {block_tables + static_cast<std::int64_t>(b) * max_blocks, block_size, num_blocks};
  }
};

/// \brief The queries of one sequence: rows `q_begin .. q_begin + n_q - 1` of the packed
/// `(rows, n_heads, head_dim)` q and out, at positions `start .. start + n_q - 1`; query t
/// attends to keys `0 .. start + t` (causal). `start` is negative only for bad lengths.
struct SeqQueries {
  int q_begin;  ///< first row
  int n_q;      ///< rows
  int start;    ///< position of the first row
};

/// \brief Clamps a device length into `[0, max_len]`.
__device__ __forceinline__ int clamp_len(int len, int max_len) { return min(max(len, 0), max_len); }

/// \brief Decode: `q_len` queries per sequence, its newest tokens (positions `C - q_len ..
/// C - 1` for a context of C keys); q packed `(batch, q_len, n_heads, head_dim)`.
struct FixedQueries {
  const int* context_lens = nullptr;  ///< (batch) keys in the cache, new ones included
  int q_len = 1;                      ///< queries per sequence
  int max_context = 0;                ///< lengths are clamped to this

  /// \brief Sequence `b`'s queries.
  __device__ __forceinline__ SeqQueries seq(int b) const {
    return {b * q_len, q_len, clamp_len(context_lens[b], max_context) - q_len};
  }
};

/// \brief Contiguous prefill: one sequence (b = 0) whose `n_queries` new tokens sit at
/// positions `start ..` (host values, checked by the launcher).
struct ChunkQueries {
  int n_queries = 0;  ///< new tokens
  int start = 0;      ///< position of the first

  /// \brief The sequence's queries.
  __device__ __forceinline__ SeqQueries seq(int) const { return {0, n_queries, start}; }
};

/// \brief Varlen paged prefill: sequence b's Q_b new tokens are rows `cu_seqlens[b] ..
/// cu_seqlens[b + 1] - 1` of the packed q, the last Q_b of its context.
struct VarlenQueries {
  const int* cu_seqlens = nullptr;    ///< (batch + 1) prefix sums of the Q_b
  int total_q = 0;                    ///< rows of q; entries are clamped into [0, total_q]
  const int* context_lens = nullptr;  ///< (batch) keys in the cache, new ones included
  int max_context = 0;                ///< lengths are clamped to this

  /// \brief Sequence `b`'s queries.
  __device__ __forceinline__ SeqQueries seq(int b) const {
    const int q_begin = clamp_len(cu_seqlens[b], total_q);
    const int n_q = min(max(cu_seqlens[b + 1], q_begin), total_q) - q_begin;
    return {q_begin, n_q, clamp_len(context_lens[b], max_context) - n_q};
  }
};

/// \brief The launcher check every attention kernel shares: GQA head counts and a head width
/// in [1, kAttentionMaxHeadDim].
inline void check_attention_heads(const char* op, const AttentionHeads& heads) {
  kargs::require_gqa_heads(op, heads.n_heads, heads.n_kv_heads);
  kargs::require(heads.head_dim >= 1 && heads.head_dim <= kAttentionMaxHeadDim, op,
                 "head_dim = " + std::to_string(heads.head_dim) + " must be in [1, " +
                     std::to_string(kAttentionMaxHeadDim) + "]");
}

/// \brief The launcher checks of the paged layout: pool and table sizes, batch, head counts.
/// Keeps every key index below 2^30, so positions, FastDivmod and `j + keys_per_split` stay
/// inside `int`.
template <typename T>
void check_paged_args(const char* op, const PagedKVView<T>& kv, const DeviceBlockTables& tables,
                      const AttentionHeads& heads) {
  kargs::require_at_least(op, "num_blocks", kv.num_blocks, 1);
  kargs::require(kv.block_size >= 1 && kv.block_size <= kPagedMaxBlockSize, op,
                 "block_size = " + std::to_string(kv.block_size) + " must be in [1, " +
                     std::to_string(kPagedMaxBlockSize) + "]");
  kargs::require(
      tables.batch >= 0 && tables.batch <= 65535, op,
      "batch = " + std::to_string(tables.batch) + " must be in [0, 65535] (a grid z dimension)");
  kargs::require_at_least(op, "max_blocks_per_seq", tables.max_blocks_per_seq, 1);
  const std::int64_t max_context = std::int64_t{tables.max_blocks_per_seq} * kv.block_size;
  kargs::require(
      max_context <= (std::int64_t{1} << 30), op,
      "max_blocks_per_seq * block_size = " + std::to_string(max_context) + " must be <= 2^30 keys");
  check_attention_heads(op, heads);
}

/// \brief The addressing policy of a checked paged view and its block tables.
template <typename T>
PagedKV paged_addressing(const PagedKVView<T>& kv, const DeviceBlockTables& tables) {
  return {tables.block_tables, tables.max_blocks_per_seq, FastDivmod(kv.block_size),
          kv.num_blocks};
}

}  // namespace nanoserve
