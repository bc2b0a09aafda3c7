// Prefill attention over a contiguous KV cache: n_queries positions of one sequence, causal,
// GQA.
//
// Versions:
//   v01  one block per (query, head), as decode v01 (attention_naive.cuh): all scores of the
//        row in shared memory. Every block re-reads its whole key prefix: O(T^2) global reads.
//   v02  FlashAttention-2 tiling (Dao, "FlashAttention-2", 2023, Algorithm 1; Dao et al.,
//        "FlashAttention", 2022): a block owns Br query rows, K and V stream through shared
//        memory in tiles of Bc = 32 keys, and each row keeps a running max m and sum l, so the
//        (T x T) score matrix never exists. For each K/V tile j, per row i:
//            S_ij  = Q_i K_j^T * scale          (causal mask: S = -inf where key > position)
//            m_new = max(m, rowmax(S_ij))
//            P_ij  = exp(S_ij - m_new)
//            l     = e^(m - m_new) l + rowsum(P_ij)
//            O_i   = e^(m - m_new) O_i + P_ij V_j
//        and at the end O_i / l. Rows of a block are (position, query head) pairs of one GQA
//        group, packed position-major, so each K/V tile is loaded once for the whole group.
//
// v02 threads: 4 warps, each owning kRowsPerWarp rows. S: lane c computes column c (key
// j0 + c) of its rows, reading the key tile from shared memory. O: lane c owns output values
// c, c + 32, ... of its rows. The K/V tile rows are stored rotated by their index
// (element e of row c at c*head_dim + (e + c) % head_dim), so 32 lanes reading the same e of
// 32 different rows hit 32 different banks when head_dim is a multiple of 32, without padding.
//
// Caveats: fp32 CUDA-core arithmetic (no tensor cores), K and V share one tile buffer (four
// barriers per tile) to keep head_dim 256 inside the 48 KiB default of shared memory.
#include <cmath>
#include <cstdint>
#include <string>

#include "kernels/attention.h"
#include "kernels/attention_naive.cuh"
#include "kernels/kernel_args.h"
#include "kernels/reduce.cuh"

namespace nanoserve {
namespace {

constexpr int kPrefillWarps = 4;
constexpr int kBc = 32;  // keys per tile: one per lane

// ---------------------------------------------------------------------------------------------
// v01

// q (n_queries, n_heads, head_dim), caches (max_seq_len, n_kv_heads, head_dim),
// out (n_queries, n_heads, head_dim); grid (n_queries, n_heads) — queries on x, the dimension
// without the 65535 limit — block (kNaiveAttentionBlock)
template <typename T>
__global__ void attention_prefill_kernel_v01(const float* __restrict__ q,
                                             const T* __restrict__ k_cache,
                                             const T* __restrict__ v_cache, int start,
                                             int n_heads, int n_kv_heads, int head_dim,
                                             float scale, float* __restrict__ out) {
  NS_DYNAMIC_SHARED(float, smem);
  const int t = blockIdx.x, h = blockIdx.y;
  const int g = h / (n_heads / n_kv_heads);
  const std::int64_t kv_stride = static_cast<std::int64_t>(n_kv_heads) * head_dim;
  const std::int64_t q_off = (static_cast<std::int64_t>(t) * n_heads + h) * head_dim;
  attend_one_query_naive(q + q_off, k_cache + g * head_dim, v_cache + g * head_dim, kv_stride,
                         start + t + 1, head_dim, scale, out + q_off, smem);
}

// ---------------------------------------------------------------------------------------------
// v02

// Copies keys (or values) j0 .. j0 + kBc - 1 of KV head g into the rotated tile, as fp32;
// rows at or past kv_end become zeros (never read from the cache: they may be unwritten).
template <typename T>
__device__ __forceinline__ void load_kv_tile(const T* __restrict__ cache, int j0, int kv_end,
                                             int g, int n_kv_heads, int head_dim, float* tile) {
  for (int idx = threadIdx.x; idx < kBc * head_dim; idx += blockDim.x) {
    const int c = idx / head_dim, e = idx % head_dim;  // consecutive threads: consecutive e
    const int j = j0 + c;
    const float val =
        j < kv_end
            ? to_float(cache[(static_cast<std::int64_t>(j) * n_kv_heads + g) * head_dim + e])
            : 0.0f;
    int rotated = e + c % head_dim;
    if (rotated >= head_dim) rotated -= head_dim;
    tile[c * head_dim + rotated] = val;
  }
}

// q (n_queries, n_heads, head_dim), caches (max_seq_len, n_kv_heads, head_dim),
// out (n_queries, n_heads, head_dim); grid (ceil(n_queries * group / Br), n_kv_heads),
// block (kPrefillWarps * 32), dynamic smem (Br * head_dim + kBc * head_dim + Br * kBc) floats.
template <typename T, int kRowsPerWarp, int kDimsPerLane>
__global__ void attention_prefill_kernel_v02(const float* __restrict__ q,
                                             const T* __restrict__ k_cache,
                                             const T* __restrict__ v_cache, int n_queries,
                                             int start, int n_heads, int n_kv_heads,
                                             int head_dim, float scale,
                                             float* __restrict__ out) {
  constexpr int kBr = kPrefillWarps * kRowsPerWarp;
  NS_DYNAMIC_SHARED(float, smem);
  float* q_tile = smem;                      // (Br, head_dim)   Q_i
  float* kv_tile = q_tile + kBr * head_dim;  // (Bc, head_dim)   K_j, then V_j, rows rotated
  float* p_tile = kv_tile + kBc * head_dim;  // (Br, Bc)         P_ij

  const int group = n_heads / n_kv_heads;
  const int g = blockIdx.y;
  const int n_rows = n_queries * group;  // packed rows: row = t * group + (h - g * group)
  const int row0 = blockIdx.x * kBr;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;

  // Q_i, zero rows past the end.
  for (int idx = threadIdx.x; idx < kBr * head_dim; idx += blockDim.x) {
    const int row = row0 + idx / head_dim, e = idx % head_dim;
    const int t = row / group, h = g * group + row % group;
    q_tile[idx] = row < n_rows
                      ? q[(static_cast<std::int64_t>(t) * n_heads + h) * head_dim + e]
                      : 0.0f;
  }

  // Per row of this warp: its position (-1 for rows past the end: nothing visible), m, l, O.
  int pos[kRowsPerWarp];
  float m[kRowsPerWarp], l[kRowsPerWarp], o[kRowsPerWarp][kDimsPerLane];
  NS_UNROLL
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int row = row0 + warp * kRowsPerWarp + r;
    pos[r] = row < n_rows ? start + row / group : -1;
    m[r] = -INFINITY;
    l[r] = 0.0f;
    NS_UNROLL
    for (int d = 0; d < kDimsPerLane; ++d) o[r][d] = 0.0f;
  }
  // Keys the block needs: up to the position of its last row (causal).
  const int kv_end = start + (min(row0 + kBr, n_rows) - 1) / group + 1;

  for (int j0 = 0; j0 < kv_end; j0 += kBc) {
    __syncthreads();  // Q_i stored (first tile) / V_{j-1} consumed by every warp
    load_kv_tile(k_cache, j0, kv_end, g, n_kv_heads, head_dim, kv_tile);
    __syncthreads();

    // S_ij: lane c = key j0 + c; row c of the tile starts rotated by c.
    float s[kRowsPerWarp];
    NS_UNROLL
    for (int r = 0; r < kRowsPerWarp; ++r) s[r] = 0.0f;
    const float* k_row = kv_tile + lane * head_dim;
    int rotated = lane % head_dim;
    for (int e = 0; e < head_dim; ++e) {
      const float k_val = k_row[rotated];
      if (++rotated == head_dim) rotated = 0;
      NS_UNROLL
      for (int r = 0; r < kRowsPerWarp; ++r) {
        s[r] += q_tile[(warp * kRowsPerWarp + r) * head_dim + e] * k_val;  // broadcast read
      }
    }

    // Online softmax per row; P_ij to shared memory for the P V product.
    const int j = j0 + lane;
    NS_UNROLL
    for (int r = 0; r < kRowsPerWarp; ++r) {
      const bool visible = j <= pos[r];
      const float s_val = visible ? s[r] * scale : -INFINITY;
      const float m_new = fmaxf(m[r], warp_max(s_val));
      // m_new is -inf only while no key is visible to the row (then l and O are still 0).
      const float p = visible ? __expf(s_val - m_new) : 0.0f;
      const float corr = m[r] == -INFINITY ? 0.0f : __expf(m[r] - m_new);
      l[r] = l[r] * corr + warp_sum(p);
      NS_UNROLL
      for (int d = 0; d < kDimsPerLane; ++d) o[r][d] *= corr;
      m[r] = m_new;
      p_tile[(warp * kRowsPerWarp + r) * kBc + lane] = p;
    }
    __syncthreads();  // every warp is done with K_j
    load_kv_tile(v_cache, j0, kv_end, g, n_kv_heads, head_dim, kv_tile);
    __syncthreads();

    // O_i += P_ij V_j: lane owns values lane, lane + 32, ...
    NS_UNROLL
    for (int d = 0; d < kDimsPerLane; ++d) {
      const int e = lane + 32 * d;
      if (e < head_dim) {
        NS_UNROLL
        for (int r = 0; r < kRowsPerWarp; ++r) {
          const float* p_row = p_tile + (warp * kRowsPerWarp + r) * kBc;
          float acc = 0.0f;
          int at = e;  // row c holds value e at (e + c) % head_dim
          for (int c = 0; c < kBc; ++c) {
            acc += p_row[c] * kv_tile[c * head_dim + at];
            if (++at == head_dim) at = 0;
          }
          o[r][d] += acc;
        }
      }
    }
  }

  // O_i / l, back to (n_queries, n_heads, head_dim).
  NS_UNROLL
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int row = row0 + warp * kRowsPerWarp + r;
    if (row >= n_rows) continue;
    const int t = row / group, h = g * group + row % group;
    float* out_row = out + (static_cast<std::int64_t>(t) * n_heads + h) * head_dim;
    NS_UNROLL
    for (int d = 0; d < kDimsPerLane; ++d) {
      const int e = lane + 32 * d;
      if (e < head_dim) out_row[e] = o[r][d] / l[r];
    }
  }
}

template <typename T, int kRowsPerWarp, int kDimsPerLane>
void launch_prefill_v02(const float* q, const T* k_cache, const T* v_cache, int n_queries,
                        int start, const AttentionHeads& heads, float* out,
                        cudaStream_t stream) {
  constexpr int kBr = kPrefillWarps * kRowsPerWarp;
  const int group = heads.n_heads / heads.n_kv_heads;
  const std::size_t smem =
      (static_cast<std::size_t>(kBr + kBc) * heads.head_dim + kBr * kBc) * sizeof(float);
  const float scale = 1.0f / std::sqrt(static_cast<float>(heads.head_dim));
  const unsigned row_tiles = kargs::blocks_for(static_cast<std::int64_t>(n_queries) * group, kBr);
  launch(attention_prefill_kernel_v02<T, kRowsPerWarp, kDimsPerLane>,
         dim3(row_tiles, heads.n_kv_heads), dim3(kPrefillWarps * 32), smem, stream, q, k_cache,
         v_cache, n_queries, start, heads.n_heads, heads.n_kv_heads, heads.head_dim, scale, out);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// launchers

template <typename T>
void launch_attention_prefill(const float* q, const T* k_cache, const T* v_cache, int n_queries,
                              int start, int max_seq_len, const AttentionHeads& heads,
                              float* out, cudaStream_t stream, int version) {
  constexpr const char* kOp = "launch_attention_prefill";
  kargs::require_at_least(kOp, "n_queries", n_queries, 0);
  kargs::require_at_least(kOp, "start", start, 0);
  kargs::require_at_least(kOp, "max_seq_len", max_seq_len, 1);
  kargs::require(static_cast<std::int64_t>(start) + n_queries <= max_seq_len, kOp,
                 "start + n_queries = " + std::to_string(std::int64_t{start} + n_queries) +
                     " exceeds max_seq_len = " + std::to_string(max_seq_len));
  kargs::require_gqa_heads(kOp, heads.n_heads, heads.n_kv_heads);
  kargs::require(heads.head_dim >= 1 && heads.head_dim <= kAttentionMaxHeadDim, kOp,
                 "head_dim = " + std::to_string(heads.head_dim) + " must be in [1, " +
                     std::to_string(kAttentionMaxHeadDim) + "]");
  kargs::require_version(kOp, version, kAttentionPrefillVersions);
  if (version == 0) version = 2;
  if (n_queries == 0) return;

  if (version == 1) {
    const std::size_t smem = naive_attention_smem_bytes(heads.head_dim, start + n_queries);
    kargs::require(smem <= 48 * 1024, kOp,
                   "version 1 keeps all " + std::to_string(start + n_queries) +
                       " scores in shared memory (" + std::to_string(smem) +
                       " bytes > 48 KiB); use version 2");
    const float scale = 1.0f / std::sqrt(static_cast<float>(heads.head_dim));
    launch(attention_prefill_kernel_v01<T>, dim3(n_queries, heads.n_heads),
           dim3(kNaiveAttentionBlock), smem, stream, q, k_cache, v_cache, start, heads.n_heads,
           heads.n_kv_heads, heads.head_dim, scale, out);
  } else if (heads.head_dim <= 128) {
    // Br = 16 rows: (16 + 32) * 128 + 16 * 32 floats = 26 KiB of shared memory at head_dim 128.
    launch_prefill_v02<T, 4, 4>(q, k_cache, v_cache, n_queries, start, heads, out, stream);
  } else {
    // Br = 8 rows keeps head_dim 256 at (8 + 32) * 256 + 8 * 32 floats = 41 KiB.
    launch_prefill_v02<T, 2, 8>(q, k_cache, v_cache, n_queries, start, heads, out, stream);
  }
}

template void launch_attention_prefill<float>(const float*, const float*, const float*, int, int,
                                              int, const AttentionHeads&, float*, cudaStream_t,
                                              int);
template void launch_attention_prefill<__half>(const float*, const __half*, const __half*, int,
                                               int, int, const AttentionHeads&, float*,
                                               cudaStream_t, int);
template void launch_attention_prefill<__nv_bfloat16>(const float*, const __nv_bfloat16*,
                                                      const __nv_bfloat16*, int, int, int,
                                                      const AttentionHeads&, float*,
                                                      cudaStream_t, int);

}  // namespace nanoserve
