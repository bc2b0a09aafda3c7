#pragma once
/// \file
/// \brief PagedAttention (Kwon et al., "Efficient Memory Management for Large Language Model
/// Serving with PagedAttention", SOSP 2023): causal GQA attention whose keys and values live
/// in a pool of fixed-size KV blocks, found through per-sequence block tables (chapter 2).
///
/// The kernels are those of the contiguous cache (kernels/attention.h), written once over a KV
/// addressing policy (kernels/attention_kv.cuh: `ContiguousKV` or `PagedKV`) in
/// kernels/attention_decode.cu and kernels/attention_prefill.cu, so a version number means the
/// same idea for both layouts.
///
/// Layout, per layer (the launchers take the layer's base pointers):
///
///     k_cache, v_cache   (num_blocks, block_size, n_kv_heads, head_dim)    storage type T
///                         = (num_slots, kv_dim) with slot = block * block_size + offset,
///                           the slot convention of launch_kv_append (kernels/kv_append.h)
///     block_tables       (batch, max_blocks_per_seq) int32 physical block ids
///     context_lens       (batch) int32 tokens of each sequence with K/V in the cache
///
/// Block size 4; sequence 0 holds 10 tokens in blocks [7, 2, 5], sequence 1 holds 3 in [0]:
///
///     block_tables    seq 0: [ 7, 2, 5, - ]     seq 1: [ 0, -, -, - ]     (- : never read)
///
///     physical block      0                 2                 5                 7
///     its 4 slots     [1:0 1:1 1:2  . ] [0:4 0:5 0:6 0:7] [0:8 0:9  .   . ] [0:0 0:1 0:2 0:3]
///     first slot          0                 8                 20                28
///                     (s:p = sequence s, position p; . = unowned; blocks 1, 3, 4, 6 unused)
///
///     key 9 of seq 0: block_tables[0][9 / 4] * 4 + 9 % 4 = 5 * 4 + 1 = slot 21
///
/// Only slots below a sequence's context length are read; the rest of its last block, the
/// table entries past its last block and every unused block may hold anything (the tests fill
/// them with NaN).
///
/// Query positions: a sequence with context length C and Q new queries (already appended to
/// the cache by launch_kv_append) has query i at position `C - Q + i`, attending to keys
/// `0 .. C - Q + i` — the prefix and, causally, the new tokens before it. Decode is Q = 1;
/// speculative verification is Q = γ + 1; a prefill chunk after a prefix-cache hit of P tokens
/// is Q new tokens with C = P + Q.
///
/// Device data cannot be checked by the launchers, so the kernels define what happens with
/// bad values instead of faulting: context lengths are clamped to `[0, max_blocks_per_seq *
/// block_size]`; a query whose position is negative (C < Q) sees no key and gets a zero
/// output; a table entry outside `[0, num_blocks)` that a query needs is read as NaN instead
/// of memory outside the pool, so that sequence's output becomes NaN (every other sequence is
/// unaffected).

#include <cstddef>

#include "kernels/attention.h"
#include "kernels/cuda_compat.h"
#include "kernels/dtype.cuh"

namespace nanoserve {

/// \brief A view of one layer's paged K and V pools: what a paged attention kernel is handed,
/// with the batch's DeviceBlockTables. Non-owning; the engine's `PagedKVCache`
/// (common/engine) owns the memory and builds one of these per layer and step.
template <typename T>
struct PagedKVView {
  const T* k_cache = nullptr;  ///< (num_blocks, block_size, n_kv_heads, head_dim) keys
  const T* v_cache = nullptr;  ///< (num_blocks, block_size, n_kv_heads, head_dim) values
  int num_blocks = 0;          ///< physical blocks in each pool (>= 1)
  int block_size = 0;          ///< tokens per block, in [1, kPagedMaxBlockSize]
};

/// \brief The block tables and context lengths of a batch of sequences, in device memory.
struct DeviceBlockTables {
  const int* block_tables = nullptr;  ///< (batch, max_blocks_per_seq) physical block ids
  const int* context_lens = nullptr;  ///< (batch) tokens in the cache, new ones included
  int batch = 0;                      ///< sequences, in [0, 65535]
  int max_blocks_per_seq = 0;         ///< row length of block_tables (>= 1)
};

/// \brief Largest block size the paged kernels accept (as BlockPool's limit).
inline constexpr int kPagedMaxBlockSize = 4096;

/// @name Decode: a few query positions per sequence
/// @{

/// \brief Number of paged decode kernel versions: the decode kernels are one source for both
/// layouts (kernels/attention_decode.cu), so version N is the same idea as contiguous decode vN.
inline constexpr int kPagedDecodeVersions = kAttentionDecodeVersions;

/// \brief The smallest split-K partition of paged decode v02 before rounding up to whole
/// blocks (the contiguous decode's, so the two kernels split alike): a workspace sized with it
/// (paged_attention_decode_workspace_floats' default) holds any automatic split.
inline constexpr int kPagedDecodeKeysPerSplit = kAttentionDecodeKeysPerSplit;

/// \brief Floats of workspace paged decode v02 needs to split contexts of up to
/// `max_context` keys into partitions of `keys_per_split` (0 when one partition covers it):
/// per (sequence, query, head, partition) an unnormalised output row and its (m, l).
/// \param batch          sequences
/// \param q_len          query positions per sequence
/// \param n_heads        query heads
/// \param head_dim       values per head
/// \param max_context    max_blocks_per_seq * block_size
/// \param keys_per_split keys per partition (>= 1)
std::size_t paged_attention_decode_workspace_floats(int batch, int q_len, int n_heads, int head_dim,
                                                    int max_context,
                                                    int keys_per_split = kPagedDecodeKeysPerSplit);

/// \brief Paged decode attention: `q_len` queries per sequence (positions `C - q_len + i`,
/// causal among themselves), keys and values gathered through the block tables, on `stream`.
///
/// Versions: 1 = one thread block per (sequence, query, query head): scores of every key in
/// shared memory, each key found through the block table, then softmax, then the weighted sum
/// of V (needs `max_blocks_per_seq * block_size` floats of shared memory). 2 = one thread block per
/// (sequence, KV head, group of up to 8 (query, head) rows, partition): each K/V row is
/// loaded once, with 16-byte loads, for all query heads of the GQA group and all query
/// positions, through an online softmax (more than 8 rows — e.g. group 8 with q_len 2 — take
/// several thread blocks, each re-reading K/V, mostly from L2); with a workspace, contexts are
/// split into partitions (a whole number of blocks each) run by parallel thread blocks, then a
/// combine kernel merges them (flash-decoding): partitions of `keys_per_split` keys, or by
/// default as many as the device's occupancy calls for (attention_decode_split, with the
/// block size as the unit: none for a short context or a long batch). 0 picks 2 when
/// `head_dim * sizeof(T)` is a multiple of 16 and the pools are 16-byte aligned, else 1.
/// \tparam T storage type of the pools: float, __half or __nv_bfloat16
/// \tparam A storage type of q and out (activations): float, __half or __nv_bfloat16
/// \param q              (batch, q_len, n_heads, head_dim) queries in the activation type A, RoPE applied
/// \param kv             the layer's K/V pools
/// \param tables         block tables and context lengths of the batch
/// \param q_len          queries per sequence, in [1, 64]
/// \param heads          head counts and width
/// \param out            (batch, q_len, n_heads, head_dim) in A (rounded once)
/// \param workspace      split-K scratch for version 2 (see
///                       paged_attention_decode_workspace_floats); ignored by version 1
/// \param stream         CUDA stream
/// \param version        0 (auto) or 1..kPagedDecodeVersions
/// \param keys_per_split keys per partition when version 2 splits: a multiple of block_size
///                       (checked only when a workspace is given), or kDecodeSplitAuto: the
///                       occupancy's choice, capped at what the workspace holds
/// \throws std::invalid_argument for bad sizes, n_heads not a multiple of n_kv_heads, a head
///         width version 2 cannot load, a partition that is not a whole number of blocks, a
///         workspace too small for a fixed keys_per_split, or a context too long for version
///         1's shared memory
template <typename T, typename A = float>
void launch_paged_attention_decode(const nondeduced_t<A>* q, const PagedKVView<T>& kv,
                                   const DeviceBlockTables& tables, int q_len,
                                   const AttentionHeads& heads, nondeduced_t<A>* out,
                                   DecodeWorkspace workspace, cudaStream_t stream, int version = 0,
                                   int keys_per_split = kDecodeSplitAuto);
/// @}

/// @name Prefill: many query positions per sequence, variable lengths, one launch
/// @{

/// \brief Number of paged prefill kernel versions: one source with contiguous prefill
/// (kernels/attention_prefill.cu), so version N is the same idea as contiguous prefill vN.
inline constexpr int kPagedPrefillVersions = kAttentionPrefillVersions;

/// \brief Batched variable-length paged prefill: sequence b's new tokens are rows
/// `cu_seqlens_q[b] .. cu_seqlens_q[b + 1] - 1` of the packed `q`; with Q_b of them and
/// context length C_b, row `cu_seqlens_q[b] + i` sits at position `C_b - Q_b + i` and attends
/// causally to keys `0 .. C_b - Q_b + i`, whether they came from cached blocks (a prefix-cache
/// hit) or were just appended. A decode row is Q_b = 1, so one launch serves the mixed
/// batches of chunked prefill (chapter 4).
///
/// Versions: 1 = one thread block per (sequence, new token, query head): scores of every key in
/// shared memory, then softmax, then the weighted sum of V (as decode v01; needs
/// `max_blocks_per_seq * block_size` floats of shared memory). 2 = FlashAttention-2 tiling
/// (Dao 2023) over the paged keys: a thread block owns Br (position, query head) rows of one
/// sequence's GQA group; K/V tiles of 32 keys are gathered through the block table into shared
/// memory; each row keeps a running max m and sum l. Grid (ceil(max_q_len * group / Br),
/// n_kv_heads, batch): the tiles past a shorter sequence's rows exit at once (the varlen grid
/// of FlashAttention). 3 = version 2 on the tensor cores (WMMA, fp32 accumulators; the K/V
/// tiles gathered through the block table by `__pipeline_memcpy_async`, double-buffered), for
/// T and A both fp16 or both bf16 and head_dim a multiple of 16 in [16, 128]. 0 picks
/// attention_prefill_auto_version (3 where it can run, else 2).
/// \tparam T storage type of the pools: float, __half or __nv_bfloat16
/// \tparam A storage type of q and out (activations): float, __half or __nv_bfloat16
/// \param q            (total_q, n_heads, head_dim) queries in A of all sequences, packed
/// \param cu_seqlens_q (batch + 1) device prefix sums of the Q_b: [0, Q_0, Q_0 + Q_1, …];
///                     entries are clamped into [0, total_q]
/// \param total_q      rows of q and out (0 launches nothing)
/// \param max_q_len    host upper bound of the Q_b (>= 1): rows of a sequence past it are
///                     neither computed nor written
/// \param kv           the layer's K/V pools
/// \param tables       block tables and context lengths of the batch
/// \param heads        head counts and width
/// \param out          (total_q, n_heads, head_dim) in A (rounded once)
/// \param stream       CUDA stream
/// \param version      0 (auto) or 1..kPagedPrefillVersions
/// \throws std::invalid_argument for bad sizes or head counts, a context too long for
///         version 1's shared memory, or version 3 with types or a head width it cannot take
template <typename T, typename A = float>
void launch_paged_attention_prefill(const nondeduced_t<A>* q, const int* cu_seqlens_q, int total_q,
                                    int max_q_len, const PagedKVView<T>& kv,
                                    const DeviceBlockTables& tables, const AttentionHeads& heads,
                                    nondeduced_t<A>* out, cudaStream_t stream, int version = 0);
/// @}

}  // namespace nanoserve
