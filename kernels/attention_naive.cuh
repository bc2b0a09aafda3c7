#pragma once
/// \file
/// \brief Attention v01, the textbook algorithm shared by decode and prefill and by both KV
/// layouts: one thread block per (query, query head) of a sequence, every score in shared
/// memory, a block-wide softmax, then the weighted sum of V. Kept as the baseline the streaming
/// (decode v02) and tiled (prefill v02) versions are measured against. Each query head re-reads
/// its KV head, reads are 2-4 bytes per thread, and shared memory caps the context (about 12k
/// keys at head_dim 128).

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "kernels/attention.h"
#include "kernels/attention_kv.cuh"
#include "kernels/dtype.cuh"
#include "kernels/kernel_args.h"
#include "kernels/reduce.cuh"

namespace nanoserve {

/// \brief Threads per block of attention v01.
inline constexpr int kNaiveAttentionBlock = 128;

/// \brief Dynamic shared memory of v01 for up to `max_keys` keys: the query row and one score
/// per key.
inline std::size_t naive_attention_smem_bytes(int head_dim, int max_keys) {
  return (static_cast<std::size_t>(head_dim) + static_cast<std::size_t>(max_keys)) *
         sizeof(float);
}

/// \brief v01: `out = Σ_j softmax(q · k_j * scale)_j v_j` over the keys `0 .. position` of one
/// query, by the whole block. A key whose row is -1 (a bad block id) gives NaN, so the whole
/// output of that query is NaN; a query at a negative position gets zeros.
///
/// q, out (rows, n_heads, head_dim) packed as `queries` says; k_cache, v_cache addressed by
/// `kv`; grid (max queries per sequence, n_heads, batch), block (kNaiveAttentionBlock),
/// dynamic smem (head_dim + max keys) floats.
template <typename T, typename A, typename KV, typename Queries>
__global__ void attention_kernel_v01(const A* __restrict__ q, const T* __restrict__ k_cache,
                                     const T* __restrict__ v_cache, KV kv, Queries queries,
                                     int n_heads, int n_kv_heads, int head_dim, float scale,
                                     A* __restrict__ out) {
  NS_DYNAMIC_SHARED(float, smem);
  __shared__ float scratch[32];
  const int t = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  const SeqQueries sq = queries.seq(b);
  if (t >= sq.n_q) return;  // whole block: past this sequence's queries
  const int n_keys = max(sq.start + t + 1, 0);  // keys 0 .. position (causal)
  const std::int64_t q_off = (static_cast<std::int64_t>(sq.q_begin + t) * n_heads + h) * head_dim;
  A* out_row = out + q_off;  // (head_dim)
  if (n_keys == 0) {  // uniform across the block: the early return is whole-block
    for (int e = threadIdx.x; e < head_dim; e += blockDim.x) out_row[e] = from_float<A>(0.0f);
    return;
  }
  const typename KV::Seq seq = kv.seq(b);
  const std::int64_t kv_stride = static_cast<std::int64_t>(n_kv_heads) * head_dim;
  const std::int64_t head_off = static_cast<std::int64_t>(h / (n_heads / n_kv_heads)) * head_dim;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, n_warps = blockDim.x / 32;
  float* q_s = smem;                // (head_dim)
  float* scores = smem + head_dim;  // (n_keys) scores, then unnormalised probabilities
  for (int e = threadIdx.x; e < head_dim; e += blockDim.x) q_s[e] = to_float(q[q_off + e]);
  __syncthreads();

  // BEGIN EXERCISE ch01.2 "The naive attention loop: scores, softmax, weighted sum of V" points=20 minutes=45
  // HINT: Three steps, each followed by a barrier: (1) scores[j] = (q . k_j) * scale for every
  // HINT: key j < n_keys (a warp per key, warp_sum over head_dim; seq.row(j) is the cache row,
  // HINT: -1 means a bad block: score NaN); (2) subtract block_max of the scores, exponentiate
  // HINT: in place and block_sum them; (3) out_row[e] = sum_j p_j v_j[e] / sum.
  // STUB: (void)seq; (void)kv_stride; (void)head_off; (void)lane; (void)warp; (void)n_warps;
  // STUB: (void)scores; (void)scale; (void)k_cache; (void)v_cache; (void)scratch;
  // STUB: for (int e = threadIdx.x; e < head_dim; e += blockDim.x) {
  // STUB:   out_row[e] = from_float<A>(0.0f);
  // STUB: }
  // 1. scores: a warp per key, lanes across head_dim (coalesced reads of the key row).
  for (int j = warp; j < n_keys; j += n_warps) {
    const std::int64_t row = seq.row(j);
    float dot = 0.0f;
    if (row >= 0) {
      const T* k_j = k_cache + row * kv_stride + head_off;  // (head_dim)
      for (int e = lane; e < head_dim; e += 32) dot += q_s[e] * to_float(k_j[e]);
    }
    dot = warp_sum(dot);
    if (lane == 0) scores[j] = row >= 0 ? dot * scale : NAN;
  }
  __syncthreads();

  // 2. softmax numerators exp(s - max) and their sum (each thread rewrites its own entries).
  float s_max = -INFINITY;
  for (int j = threadIdx.x; j < n_keys; j += blockDim.x) s_max = fmaxf(s_max, scores[j]);
  s_max = block_max(s_max, scratch);
  float sum = 0.0f;
  for (int j = threadIdx.x; j < n_keys; j += blockDim.x) {
    const float p = expf(scores[j] - s_max);
    scores[j] = p;
    sum += p;
  }
  sum = block_sum(sum, scratch);  // also orders the writes above before the reads below

  // 3. out = Σ_j p_j v_j / sum: a thread per output value, consecutive threads read
  // consecutive values of each V row.
  for (int e = threadIdx.x; e < head_dim; e += blockDim.x) {
    float acc = 0.0f;
    for (int j = 0; j < n_keys; ++j) {
      const std::int64_t row = seq.row(j);
      acc += row >= 0 ? scores[j] * to_float(v_cache[row * kv_stride + head_off + e]) : NAN;
    }
    out_row[e] = from_float<A>(acc / sum);
  }
  // END EXERCISE
}

/// \brief Launches v01 for `batch` sequences of at most `max_q_len` queries each whose contexts
/// hold at most `max_keys` keys, on `stream`; throws std::invalid_argument (naming `op`) when
/// the scores do not fit in 48 KiB of shared memory.
template <typename T, typename A, typename KV, typename Queries>
void launch_attention_v01(const char* op, const A* q, const T* k_cache, const T* v_cache,
                          const KV& kv, const Queries& queries, int batch, int max_q_len,
                          int max_keys, const AttentionHeads& heads, A* out,
                          cudaStream_t stream) {
  const std::size_t smem = naive_attention_smem_bytes(heads.head_dim, max_keys);
  kargs::require(smem <= 48 * 1024, op,
                 "version 1 keeps all " + std::to_string(max_keys) +
                     " scores in shared memory (" + std::to_string(smem) +
                     " bytes > 48 KiB); use version 2");
  kargs::require(heads.n_heads <= 65535, op, "n_heads must be <= 65535 (a grid y dimension)");
  const float scale = 1.0f / std::sqrt(static_cast<float>(heads.head_dim));
  launch(attention_kernel_v01<T, A, KV, Queries>, dim3(max_q_len, heads.n_heads, batch),
         dim3(kNaiveAttentionBlock), smem, stream, q, k_cache, v_cache, kv, queries, heads.n_heads,
         heads.n_kv_heads, heads.head_dim, scale, out);
}

}  // namespace nanoserve
