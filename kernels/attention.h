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

/// \brief Keys each block of decode v02 handles when a workspace allows splitting a sequence
/// (flash-decoding): long contexts then spread over many blocks instead of one per head group.
inline constexpr int kAttentionDecodeKeysPerSplit = 256;

/// \brief Scratch for decode v02's split-K partial results (`data == nullptr`: no splitting).
struct DecodeWorkspace {
  float* data = nullptr;    ///< device memory of at least `floats` floats
  std::size_t floats = 0;   ///< its size
};

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
/// softmax (running max and sum, no score buffer); with a workspace, chunks of
/// `keys_per_split` keys run in parallel blocks and a second kernel merges them
/// (flash-decoding). 0 picks 2 when `head_dim * sizeof(T)` is a multiple of 16 and the caches
/// are 16-byte aligned, else 1.
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
/// \param keys_per_split keys per block when version 2 splits (>= 1)
/// \throws std::invalid_argument for bad sizes, n_heads not a multiple of n_kv_heads, a head
///         width version 2 cannot load, a too small workspace, or a cache too long for
///         version 1's shared memory
template <typename T, typename A = float>
void launch_attention_decode(const nondeduced_t<A>* q, const T* k_cache, const T* v_cache,
                             const int* lens,
                             int batch, int max_seq_len, const AttentionHeads& heads,
                             nondeduced_t<A>* out,
                             DecodeWorkspace workspace, cudaStream_t stream, int version = 0,
                             int keys_per_split = kAttentionDecodeKeysPerSplit);
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
