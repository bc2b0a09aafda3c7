#pragma once
/// \file
/// \brief The naive attention of one query head, shared by decode v01 and prefill v01: every
/// score in shared memory, a block-wide softmax, then the weighted sum of V. The textbook
/// algorithm, kept as the baseline the tiled and online-softmax versions are measured against.

#include <cmath>
#include <cstdint>

#include "kernels/dtype.cuh"
#include "kernels/reduce.cuh"

namespace nanoserve {

/// \brief Threads per block of the naive attention kernels.
inline constexpr int kNaiveAttentionBlock = 128;

/// \brief Dynamic shared memory of the naive kernels for up to `max_keys` keys: the query row
/// and one score per key.
inline std::size_t naive_attention_smem_bytes(int head_dim, int max_keys) {
  return (static_cast<std::size_t>(head_dim) + static_cast<std::size_t>(max_keys)) *
         sizeof(float);
}

/// \brief `out = Σ_j softmax(q · k_j * scale)_j v_j` over keys j < n_keys, by the whole block
/// (every thread must call it; it synchronises the block). n_keys <= 0 writes zeros.
/// \tparam T storage type of K and V
/// \param q         (head_dim) fp32 query head
/// \param k         key j of this KV head at `k + j * kv_stride`, (head_dim) values
/// \param v         value j at `v + j * kv_stride`
/// \param kv_stride elements between consecutive keys (n_kv_heads * head_dim)
/// \param n_keys    keys to attend to
/// \param head_dim  values per head
/// \param scale     1 / sqrt(head_dim)
/// \param out       (head_dim) fp32 output head
/// \param smem      (head_dim + n_keys) dynamic shared floats
template <typename T>
__device__ void attend_one_query_naive(const float* q, const T* k, const T* v,
                                       std::int64_t kv_stride, int n_keys, int head_dim,
                                       float scale, float* out, float* smem) {
  __shared__ float scratch[32];
  if (n_keys <= 0) {  // uniform across the block: the early return is whole-block
    for (int e = threadIdx.x; e < head_dim; e += blockDim.x) out[e] = 0.0f;
    return;
  }
  float* q_s = smem;                // (head_dim)
  float* scores = smem + head_dim;  // (n_keys) scores, then unnormalised probabilities
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, n_warps = blockDim.x / 32;
  for (int e = threadIdx.x; e < head_dim; e += blockDim.x) q_s[e] = q[e];
  __syncthreads();

  // 1. scores: a warp per key, lanes across head_dim (coalesced reads of the key row).
  for (int j = warp; j < n_keys; j += n_warps) {
    const T* k_j = k + j * kv_stride;  // (head_dim)
    float dot = 0.0f;
    for (int e = lane; e < head_dim; e += 32) dot += q_s[e] * to_float(k_j[e]);
    dot = warp_sum(dot);
    if (lane == 0) scores[j] = dot * scale;
  }
  __syncthreads();

  // 2. softmax numerators exp(s - max) and their sum (each thread rewrites its own entries).
  float max = -INFINITY;
  for (int j = threadIdx.x; j < n_keys; j += blockDim.x) max = fmaxf(max, scores[j]);
  max = block_max(max, scratch);
  float sum = 0.0f;
  for (int j = threadIdx.x; j < n_keys; j += blockDim.x) {
    const float p = expf(scores[j] - max);
    scores[j] = p;
    sum += p;
  }
  sum = block_sum(sum, scratch);  // also orders the writes above before the reads below

  // 3. out = Σ_j p_j v_j / sum: a thread per output value, consecutive threads read
  // consecutive values of each V row.
  for (int e = threadIdx.x; e < head_dim; e += blockDim.x) {
    float acc = 0.0f;
    for (int j = 0; j < n_keys; ++j) acc += scores[j] * to_float(v[j * kv_stride + e]);
    out[e] = acc / sum;
  }
}

}  // namespace nanoserve
