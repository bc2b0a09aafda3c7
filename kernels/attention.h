#pragma once
/// \file
/// \brief Causal attention with grouped-query heads (GQA) over a contiguous KV cache in the
/// storage type: decode (one new query per sequence, a batch of sequences of different lengths)
/// and prefill (many query positions of one sequence). The same meaning as
/// `oracle::attention`: for a query at position p and query head h,
///
///     g        = h / (n_heads / n_kv_heads)             the KV head h reads (its GQA group)
///     score[j] = q[h] · k[j][g] / sqrt(head_dim)         for keys j = 0 .. p (causal)
///     out[h]   = Σ_j softmax(score)[j] · v[j][g]
///
/// Cache layout, per layer (the launchers take the layer's base pointers):
///
///     k_cache, v_cache   (batch, max_seq_len, n_kv_heads, head_dim)
///                         └ sequence b's key at position j, head g:
///                           k_cache[((b * max_seq_len + j) * n_kv_heads + g) * head_dim + …]
///
/// Only cache rows below each sequence's length are read; the rest may hold anything.
///
/// The kernels (kernels/attention_decode.cu, kernels/attention_prefill.cu) are written once
/// over a KV addressing policy (kernels/attention_kv.cuh) and serve the paged pool of
/// kernels/paged_attention.h too, with the same version numbers.

#include <cstddef>

#include "kernels/cuda_compat.h"
#include "kernels/dtype.cuh"

namespace nanoserve {

/// \brief The head layout of one attention layer.
struct AttentionHeads {
  int n_heads = 0;     ///< query heads
  int n_kv_heads = 0;  ///< key/value heads; divides n_heads
  int head_dim = 0;    ///< values per head, in [1, kAttentionMaxHeadDim]
};

/// \brief Largest head width the attention kernels support.
inline constexpr int kAttentionMaxHeadDim = 256;

/// @name Decode: one query per sequence
/// @{

/// \brief Number of decode attention kernel versions.
inline constexpr int kAttentionDecodeVersions = 2;

/// \brief The smallest split-K chunk of decode v02 (flash-decoding): the chunks
/// attention_decode_split chooses are whole multiples of it, so a workspace sized with it
/// (attention_decode_workspace_floats' default) holds any split that choice makes. A caller
/// may also fix the chunk at any size (`keys_per_split` > 0).
inline constexpr int kAttentionDecodeKeysPerSplit = 256;

/// \brief `keys_per_split` value that lets decode v02 choose its split-K chunks from the
/// device's occupancy (attention_decode_split), the default.
inline constexpr int kDecodeSplitAuto = 0;

/// \brief (query, head) rows one thread block of decode v02 serves at most; more rows (a GQA
/// group of 16, or several query positions) take several blocks.
inline constexpr int kDecodeMaxRowsPerBlock = 8;

/// \brief Most split-K chunks the occupancy choice makes per sequence.
inline constexpr int kDecodeMaxSplits = 128;

/// \brief Scratch for decode v02's split-K partial results (`data == nullptr`: no splitting).
struct DecodeWorkspace {
  float* data = nullptr;    ///< device memory of at least `floats` floats
  std::size_t floats = 0;   ///< its size
  /// \brief Streaming multiprocessors the automatic split fills: 0 asks the current device
  /// (`cudaDevAttrMultiProcessorCount`); a value models another device (tests, the cost model).
  int sm_count = 0;
};

/// \brief How decode v02 cuts each sequence's keys: `num_splits` chunks of `keys_per_split`.
struct DecodeSplit {
  int num_splits = 1;      ///< chunks (thread blocks along the keys); 1: no split-K
  int keys_per_split = 0;  ///< keys per chunk (the whole context when num_splits is 1)
};

/// \brief The split-K choice of decode v02 when `keys_per_split` is kDecodeSplitAuto: split
/// only when the grid without splitting — batch × n_kv_heads × ceil(q_len · group / 8) thread
/// blocks — would leave the device idle, and then into as many chunks as fill it.
///
/// The heuristic of FlashAttention-2's `num_splits_heuristic` (Dao, flash_api.cpp): the device
/// holds a wave of `2 · sm_count` blocks of 128 threads; with at least 80% of a wave of blocks
/// there is no split (a long batch); otherwise, among the split counts s <= min(chunks of
/// kAttentionDecodeKeysPerSplit keys, a wave, max_splits) that change the chunk size, the
/// smallest whose wave efficiency `n / ceil(n)` (n = blocks · s / wave) is within 85% of the
/// best. Short contexts (one chunk) never split.
/// \param sm_count    streaming multiprocessors of the device (>= 1)
/// \param batch       sequences
/// \param q_len       queries per sequence
/// \param heads       head counts and width
/// \param max_context keys of the longest sequence the grid covers
/// \param split_unit  chunks are multiples of it (a paged pool's block size; >= 1)
/// \param max_splits  most chunks (what a workspace holds; >= 1)
/// \return the chunks; keys_per_split is a multiple of kAttentionDecodeKeysPerSplit rounded up
///         to a multiple of split_unit
/// \throws std::invalid_argument for a size out of range
DecodeSplit attention_decode_split(int sm_count, int batch, int q_len, const AttentionHeads& heads,
                                   int max_context, int split_unit = 1,
                                   int max_splits = kDecodeMaxSplits);

/// \brief Floats of workspace decode v02 needs to split sequences of up to `max_seq_len` keys
/// into chunks of `keys_per_split` (0 when no split is needed): per (sequence, query head,
/// split), an unnormalised output row and its running max and sum.
/// \param batch          number of sequences
/// \param n_heads        query heads
/// \param head_dim       values per head
/// \param max_seq_len    cache rows per sequence
/// \param keys_per_split keys per block (>= 1)
std::size_t attention_decode_workspace_floats(int batch, int n_heads, int head_dim,
                                              int max_seq_len,
                                              int keys_per_split = kAttentionDecodeKeysPerSplit);

/// \brief Decode attention: each sequence's single query (at position `lens[b] - 1`, its key
/// already appended) attends to cache rows `0 .. lens[b] - 1` of that sequence, on `stream`.
///
/// Versions: 1 = one block per (sequence, query head); all scores in shared memory, then a
/// softmax, then the weighted sum of V (needs `max_seq_len` floats of shared memory).
/// 2 = one block per (sequence, KV head, key chunk): every query head of the GQA group is
/// served from one read of the group's K and V, streamed with 16-byte loads through an online
/// softmax (running max and sum, no score buffer); with a workspace, chunks of keys run in
/// parallel blocks and a second kernel merges them (flash-decoding): chunks of
/// `keys_per_split` keys, or by default as many as the device's occupancy calls for
/// (attention_decode_split: none for a short context or a long batch). 0 picks 2 when
/// `head_dim * sizeof(T)` is a multiple of 16 and the caches are 16-byte aligned, else 1.
///
/// Lengths are device data, so the kernel cannot throw: a length above `max_seq_len` is clamped
/// to it, and a sequence of length <= 0 gets a zero output.
/// \tparam T storage type of the cache: float, __half or __nv_bfloat16
/// \tparam A storage type of q and out (activations): float, __half or __nv_bfloat16
/// \param q              (batch, n_heads, head_dim) queries in the activation type A, RoPE applied
/// \param k_cache        (batch, max_seq_len, n_kv_heads, head_dim) keys
/// \param v_cache        (batch, max_seq_len, n_kv_heads, head_dim) values
/// \param lens           (batch) keys per sequence, device memory
/// \param batch          number of sequences, <= 65535 (0 launches nothing)
/// \param max_seq_len    cache rows per sequence (>= 1)
/// \param heads          head counts and width
/// \param out            (batch, n_heads, head_dim) in A (rounded once)
/// \param workspace      split-K scratch for version 2 (see
///                       attention_decode_workspace_floats); ignored by version 1
/// \param stream         CUDA stream
/// \param version        0 (auto) or 1..kAttentionDecodeVersions
/// \param keys_per_split keys per block when version 2 splits (>= 1), or kDecodeSplitAuto: the
///                       occupancy's choice, capped at what the workspace holds
/// \throws std::invalid_argument for bad sizes, n_heads not a multiple of n_kv_heads, a head
///         width version 2 cannot load, a workspace too small for a fixed keys_per_split, or
///         a cache too long for version 1's shared memory
template <typename T, typename A = float>
void launch_attention_decode(const nondeduced_t<A>* q, const T* k_cache, const T* v_cache,
                             const int* lens,
                             int batch, int max_seq_len, const AttentionHeads& heads,
                             nondeduced_t<A>* out,
                             DecodeWorkspace workspace, cudaStream_t stream, int version = 0,
                             int keys_per_split = kDecodeSplitAuto);
/// @}

/// @name Prefill: many query positions of one sequence
/// @{

/// \brief Number of prefill attention kernel versions.
inline constexpr int kAttentionPrefillVersions = 3;

/// \brief The prefill version that version 0 (auto) runs, for both KV layouts: 3 (tensor
/// cores) when the KV cache and the activations are both fp16 or both bf16 and `head_dim` is a
/// multiple of 16 in [16, 128]; otherwise 2 (fp32 activations or KV — the exact mode — mixed
/// types, and head widths such as stories260K's 8 or 256).
/// \param kv       storage type of the KV cache
/// \param act      storage type of q and out
/// \param head_dim values per head
int attention_prefill_auto_version(DType kv, DType act, int head_dim);

/// \brief Prefill attention: queries `t = 0 .. n_queries - 1` of one sequence, at positions
/// `start + t`, attend causally to cache rows `0 .. start + t` (the new keys already
/// appended), on `stream`.
///
/// Versions: 1 = one block per (query, head), scores in shared memory (as decode v01).
/// 2 = tiled FlashAttention-2 (Dao 2023): a block owns Br rows, K/V stream through shared
/// memory in tiles of Bc = 32 keys, and each row keeps a running max m and sum l so that no
/// score matrix is ever stored; the rows of a block are (position, query head) pairs of one
/// GQA group, so each K/V tile serves the whole group. 3 = v02 on the tensor cores (WMMA
/// m16n16k16, fp32 accumulators): Br = 64 rows, K/V tiles of 32 keys double-buffered with
/// `__pipeline_memcpy_async`, P rounded to the input type for the PV product; needs T and A
/// both fp16 or both bf16 and head_dim a multiple of 16 in [16, 128]. 0 picks
/// attention_prefill_auto_version (3 where it can run, else 2).
/// \tparam T storage type of the cache: float, __half or __nv_bfloat16
/// \tparam A storage type of q and out (activations): float, __half or __nv_bfloat16
/// \param q           (n_queries, n_heads, head_dim) queries in the activation type A, RoPE applied
/// \param k_cache     (max_seq_len, n_kv_heads, head_dim) keys of this sequence
/// \param v_cache     (max_seq_len, n_kv_heads, head_dim) values of this sequence
/// \param n_queries   number of new positions (0 launches nothing)
/// \param start       position of the first query (>= 0); `start + n_queries <= max_seq_len`
/// \param max_seq_len cache rows (>= 1)
/// \param heads       head counts and width
/// \param out         (n_queries, n_heads, head_dim) in A (rounded once)
/// \param stream      CUDA stream
/// \param version     0 (auto) or 1..kAttentionPrefillVersions
/// \throws std::invalid_argument for bad sizes or positions, n_heads not a multiple of
///         n_kv_heads, a sequence too long for version 1's shared memory, or version 3 with
///         types or a head width it cannot take
template <typename T, typename A = float>
void launch_attention_prefill(const nondeduced_t<A>* q, const T* k_cache, const T* v_cache,
                              int n_queries,
                              int start, int max_seq_len, const AttentionHeads& heads,
                              nondeduced_t<A>* out, cudaStream_t stream, int version = 0);
/// @}

}  // namespace nanoserve
