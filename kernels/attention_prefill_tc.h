#pragma once
/// \file
/// \brief Prefill attention v03 (kernels/attention_prefill_tc.cu): FlashAttention-2 with QKᵀ and
/// PV on the tensor cores. Internal to the prefill launchers of kernels/attention_prefill.cu,
/// which choose it (attention_prefill_auto_version) and check its arguments; it is instantiated
/// only for the pairs the engine runs on tensor cores, KV and activations both fp16 or both bf16.

#include "kernels/attention.h"
#include "kernels/attention_kv.cuh"
#include "kernels/cuda_compat.h"

namespace nanoserve {

/// \brief Smallest head width v03 takes: one WMMA tile (m16n16k16).
inline constexpr int kPrefillV03MinHeadDim = 16;
/// \brief Largest head width v03 takes: its Q and O fragments live in registers and its K/V
/// tiles (double-buffered) in 48 KiB of shared memory, both sized for 128.
inline constexpr int kPrefillV03MaxHeadDim = 128;

/// \brief True when v03 can run heads of width `head_dim`: a multiple of 16 (the WMMA tile) in
/// [kPrefillV03MinHeadDim, kPrefillV03MaxHeadDim].
inline bool attention_prefill_v03_supports(int head_dim) {
  return head_dim % 16 == 0 && head_dim >= kPrefillV03MinHeadDim &&
         head_dim <= kPrefillV03MaxHeadDim;
}

/// \brief Launches prefill v03 over either KV layout, on `stream`: `batch` sequences of at most
/// `max_q_len` new tokens whose rows and positions `queries` gives and whose keys `kv`
/// addresses (kernels/attention_kv.cuh). The caller has checked the arguments, including
/// attention_prefill_v03_supports(heads.head_dim).
/// \tparam T       storage type of q, the caches and out: __half or __nv_bfloat16
/// \tparam KV      ContiguousKV or PagedKV
/// \tparam Queries ChunkQueries or VarlenQueries
/// \param q         (rows, n_heads, head_dim) queries, RoPE applied
/// \param k_cache   keys as `kv` addresses them, (…, n_kv_heads, head_dim)
/// \param v_cache   values, laid out as k_cache
/// \param kv        the KV addressing policy
/// \param queries   the query ranges of the sequences
/// \param batch     sequences (the grid's z dimension)
/// \param max_q_len host upper bound of the new tokens of a sequence
/// \param heads     head counts and width
/// \param out       (rows, n_heads, head_dim) in T (rounded once)
/// \param stream    CUDA stream
template <typename T, typename KV, typename Queries>
void launch_attention_prefill_v03(const T* q, const T* k_cache, const T* v_cache, const KV& kv,
                                  const Queries& queries, int batch, int max_q_len,
                                  const AttentionHeads& heads, T* out, cudaStream_t stream);

}  // namespace nanoserve
