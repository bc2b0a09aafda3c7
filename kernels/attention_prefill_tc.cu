// Prefill attention v03 (kernels/attention_prefill.cu dispatches; kernels/attention_prefill_tc.h):
// FlashAttention-2 (Dao, "FlashAttention-2", 2023, Algorithm 1) with both matrix products on
// the tensor cores through nvcuda::wmma m16n16k16 — fp16/bf16 operands, fp32 accumulators —
// over either KV layout and query ranges (kernels/attention_kv.cuh), like v02.
//
// A block owns Br = 64 packed (position, query head) rows of one GQA group (as v02: rows
// t * group + hh, so every K/V tile serves the whole group) and 4 warps, 16 rows each. Per
// K/V tile of Bc = 32 keys, warp w computes for its 16 rows i:
//
//   S_i  = Q_i K_jᵀ              tensor cores: Q_i fragments (registers) x K tile (col_major)
//   m'   = max(m, rowmax(scale S_i))          fp32, lanes 2r and 2r+1 own row r (shared scratch)
//   P_i  = T(exp(scale S_i - m'))             rounded to T: the tensor cores multiply only T
//   l    = e^(m - m') l + rowsum(P_i)         the sum of the rounded P that is multiplied
//   O_i  = e^(m - m') O_i + P_i V_j           tensor cores, O_i in accumulator fragments
//
// and at the end O_i / l, rounded to T once. Three things make this fit WMMA's rules:
//  - Which lane holds which element of a fragment is unspecified, but it is the same for every
//    fragment of one type, and a fragment loaded from memory reveals it: each warp loads, once,
//    an accumulator from a 16x16 matrix whose row r holds r, and so learns the row of each of
//    its elements (row_of). Rescaling O by a per-row factor is then element-wise: portable, and
//    checked by the simulator's permuted mapping (the *Wmma* tests run under both).
//  - The row max and sum need whole rows: S goes through a per-warp fp32 scratch in shared
//    memory (store_matrix_sync), where rows have addresses; P is written over it as T and read
//    back as a matrix_a fragment.
//  - K and V tiles are gathered (paged: through the block table) into shared memory rows
//    padded by 8 elements (WMMA's 32-byte pointers, 16-byte ldm, and rows spread over the banks),
//    double-buffered: tile j+1 is copied by __pipeline_memcpy_async while tile j is multiplied.
//    Each thread copies 16-byte chunks of one key (4 threads per key), so a key's cache row is
//    looked up once per thread and tile; a bad block id fills the key with NaN, a key past the
//    block's last position with zeros (synchronously: nobody reads the stage before the barrier).
//
// Shared memory: 2 stages x (K, V) x Bc x (head_dim + 8) T + 4 x 16 x (Bc + 4) fp32 = 43 KiB at
// head_dim 128 (27 KiB at 64), inside the 48 KiB default. Q is staged once in stage 1, then
// held as head_dim / 16 matrix_a fragments per warp; O as head_dim / 16 accumulators: about
// 64 + 64 registers per thread at head_dim 128, which is why v03 stops there (v02 takes 256).
// Causal: a block reads keys up to its last row's position; a warp skips a tile whose first key
// is past all of its rows' positions (the diagonal's upper triangle of tiles).
#include "kernels/attention_prefill_tc.h"

#include <cmath>
#include <cstdint>

#include "kernels/dtype.cuh"
#include "kernels/kernel_args.h"
#include "kernels/reduce.cuh"
#include "kernels/vec_load.cuh"

namespace nanoserve {
namespace {

namespace wmma = nvcuda::wmma;

constexpr int kFrag = 16;                    // M = N = K of one WMMA operation
constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kBr = kWarps * kFrag;          // 64 query rows per block
constexpr int kBc = 32;                      // keys per K/V tile
constexpr int kKeyFrags = kBc / kFrag;       // 2 fragments of S per tile
constexpr int kPad = 8;                      // T of padding per Q/K/V row in shared memory
constexpr int kLdS = kBc + 4;                // floats per row of a warp's S scratch
constexpr int kLdP = 2 * kLdS;               // T per row of P, written over S
constexpr int kChunk = 8;                    // T in 16 bytes
constexpr int kThreadsPerKey = kThreads / kBc;  // 4
constexpr std::size_t kSmemAlign = 128;      // WMMA needs 32-byte pointers; CUDA promises 16
static_assert(kBr <= 2 * kBc, "Q is staged in the two tiles of stage 1");

using FragAcc = wmma::fragment<wmma::accumulator, kFrag, kFrag, kFrag, float>;
template <typename T>
using FragA = wmma::fragment<wmma::matrix_a, kFrag, kFrag, kFrag, T, wmma::row_major>;
template <typename T>
using FragKt = wmma::fragment<wmma::matrix_b, kFrag, kFrag, kFrag, T, wmma::col_major>;
template <typename T>
using FragV = wmma::fragment<wmma::matrix_b, kFrag, kFrag, kFrag, T, wmma::row_major>;

template <typename U>
__device__ __forceinline__ U* aligned_smem() {
  NS_DYNAMIC_SHARED(unsigned char, raw);
  const std::uintptr_t p = reinterpret_cast<std::uintptr_t>(raw);
  return reinterpret_cast<U*>((p + kSmemAlign - 1) & ~static_cast<std::uintptr_t>(kSmemAlign - 1));
}

// 8 elements from global `src` to shared `dst` (16-byte aligned): one asynchronous 16-byte copy
// when `src` is aligned too, else element by element.
template <typename T>
__device__ __forceinline__ void copy_chunk(T* dst, const T* src) {
  if (aligned16(src)) {
    __pipeline_memcpy_async(dst, src, 16);
  } else {
    for (int i = 0; i < kChunk; ++i) dst[i] = src[i];
  }
}

template <typename T>
__device__ __forceinline__ void fill_chunk(T* dst, float value) {
  const T v = from_float<T>(value);
  for (int i = 0; i < kChunk; ++i) dst[i] = v;
}

// One K/V tile of keys j0 .. j0 + Bc - 1 into (k_s, v_s), each (Bc, ld): thread t copies the
// chunks t % 4, t % 4 + 4, … of key t / 4. Keys at or past kv_end are zeros, bad rows NaN.
template <typename T, typename Seq>
__device__ __forceinline__ void load_kv_tile(const T* __restrict__ k_cache,
                                             const T* __restrict__ v_cache, const Seq& seq,
                                             int j0, int kv_end, std::int64_t kv_stride,
                                             std::int64_t head_off, int head_dim, int ld, T* k_s,
                                             T* v_s) {
  const int c = static_cast<int>(threadIdx.x) / kThreadsPerKey;
  const int j = j0 + c;
  const std::int64_t row = j < kv_end ? seq.row(j) : -2;  // -1: a bad block id
  const std::int64_t at = row * kv_stride + head_off;
  for (int e = static_cast<int>(threadIdx.x) % kThreadsPerKey * kChunk; e < head_dim;
       e += kThreadsPerKey * kChunk) {
    if (row >= 0) {
      copy_chunk(k_s + c * ld + e, k_cache + at + e);
      copy_chunk(v_s + c * ld + e, v_cache + at + e);
    } else {
      fill_chunk(k_s + c * ld + e, row == -1 ? NAN : 0.0f);
      fill_chunk(v_s + c * ld + e, row == -1 ? NAN : 0.0f);
    }
  }
}

// Online softmax of one tile for the warp's 16 rows: lanes 2r, 2r + 1 own row r (position
// `pos`, -1: sees nothing) and 16 of its Bc scores each, read from the scratch `s_w`; writes P
// (in T) over the scratch and the row's correction factor e^(m - m') to corr[r].
template <typename T>
__device__ __forceinline__ void softmax_tile(float* s_w, float* corr, int j0, int pos,
                                             float scale, float& m, float& l) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int r = lane / 2, c0 = lane % 2 * (kBc / 2);
  float s[kBc / 2];
  float row_max = -INFINITY;
  for (int c = 0; c < kBc / 2; ++c) {
    s[c] = j0 + c0 + c <= pos ? s_w[r * kLdS + c0 + c] * scale : -INFINITY;
    row_max = fmaxf(row_max, s[c]);
  }
  row_max = fmaxf(row_max, __shfl_xor_sync(kFullWarpMask, row_max, 1));
  const float m_new = fmaxf(m, row_max);
  // m_new is -inf only while no key is visible to the row (then l and O are still 0).
  const float factor = m == -INFINITY ? 0.0f : __expf(m - m_new);
  T p[kBc / 2];
  float sum = 0.0f;
  for (int c = 0; c < kBc / 2; ++c) {
    p[c] = from_float<T>(j0 + c0 + c <= pos ? __expf(s[c] - m_new) : 0.0f);
    sum += to_float(p[c]);
  }
  sum += __shfl_xor_sync(kFullWarpMask, sum, 1);
  l = l * factor + sum;
  m = m_new;
  __syncwarp();  // every lane has read its scores before P overwrites them
  T* p_row = reinterpret_cast<T*>(s_w) + r * kLdP + c0;
  for (int c = 0; c < kBc / 2; ++c) p_row[c] = p[c];
  if (c0 == 0) corr[r] = factor;
  __syncwarp();
}

// q, out (rows, n_heads, head_dim) packed as `queries` says; k_cache, v_cache addressed by `kv`;
// grid (ceil(max_q_len * group / Br), n_kv_heads, batch), block (kThreads), dynamic smem
// prefill_v03_smem_bytes(head_dim). kDFrags >= head_dim / 16 sizes the register arrays.
template <typename T, typename KV, typename Queries, int kDFrags>
__global__ void __launch_bounds__(kThreads)
    attention_prefill_kernel_v03(const T* __restrict__ q, const T* __restrict__ k_cache,
                                 const T* __restrict__ v_cache, KV kv, Queries queries,
                                 int n_heads, int n_kv_heads, int head_dim, float scale,
                                 T* __restrict__ out) {
  const int ld = head_dim + kPad;  // T per row of the Q, K and V tiles
  T* const stages = aligned_smem<T>();  // 2 x (K_j (Bc, ld), V_j (Bc, ld))
  float* const scratch = reinterpret_cast<float*>(stages + 4 * kBc * ld);  // (warps, 16, kLdS)
  __shared__ float row_factor[kWarps][kFrag];  // per row: e^(m - m') per tile, 1 / l at the end

  // This block's sequence and rows (as v02).
  const int group = n_heads / n_kv_heads;
  const int g = blockIdx.y, b = blockIdx.z;
  const SeqQueries sq = queries.seq(b);
  const int n_rows = sq.n_q * group;
  const int row0 = blockIdx.x * kBr;
  if (row0 >= n_rows) return;  // whole block: past this sequence's rows
  const typename KV::Seq seq = kv.seq(b);
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int d_frags = head_dim / kFrag;
  const auto q_index = [&](int row) {  // (rows, n_heads) index of packed row `row`
    return static_cast<std::int64_t>(sq.q_begin + row / group) * n_heads + g * group + row % group;
  };
  const std::int64_t kv_stride = static_cast<std::int64_t>(n_kv_heads) * head_dim;
  const std::int64_t head_off = static_cast<std::int64_t>(g) * head_dim;
  // Keys the block needs: up to the position of its last row (causal).
  const int kv_end = max(sq.start + (min(row0 + kBr, n_rows) - 1) / group + 1, 0);
  const int warp_row0 = row0 + warp * kFrag;
  const int warp_last_pos =
      warp_row0 < n_rows ? sq.start + (min(warp_row0 + kFrag, n_rows) - 1) / group : -1;

  // Q_i -> stage 1 -> matrix_a fragments of this warp's 16 rows; zero rows past the end. The
  // first K/V tile is on its way to stage 0 meanwhile.
  T* const q_stage = stages + 2 * kBc * ld;  // (Br, ld)
  for (int idx = static_cast<int>(threadIdx.x); idx < kBr * d_frags * 2; idx += kThreads) {
    const int r = idx / (d_frags * 2), e = idx % (d_frags * 2) * kChunk;
    if (row0 + r < n_rows) {
      copy_chunk(q_stage + r * ld + e, q + q_index(row0 + r) * head_dim + e);
    } else {
      fill_chunk(q_stage + r * ld + e, 0.0f);
    }
  }
  __pipeline_commit();
  const int tiles = (kv_end + kBc - 1) / kBc;
  if (tiles > 0) {
    load_kv_tile(k_cache, v_cache, seq, 0, kv_end, kv_stride, head_off, head_dim, ld, stages,
                 stages + kBc * ld);
    __pipeline_commit();
    __pipeline_wait_prior(1);  // Q has landed
  } else {
    __pipeline_wait_prior(0);
  }
  // The warp's scratch shows it which row each accumulator element belongs to.
  float* const s_w = scratch + warp * kFrag * kLdS;  // (16, kLdS) S, then P over it
  for (int e = lane; e < kFrag * kFrag; e += 32) {
    s_w[e / kFrag * kLdS + e % kFrag] = static_cast<float>(e / kFrag);
  }
  __syncthreads();
  FragA<T> q_frag[kDFrags];
  NS_UNROLL
  for (int f = 0; f < kDFrags; ++f) {
    if (f < d_frags) wmma::load_matrix_sync(q_frag[f], q_stage + warp * kFrag * ld + f * kFrag, ld);
  }
  FragAcc rows;
  wmma::load_matrix_sync(rows, s_w, kLdS, wmma::mem_row_major);
  int row_of[FragAcc::num_elements];
  NS_UNROLL
  for (int i = 0; i < FragAcc::num_elements; ++i) row_of[i] = static_cast<int>(rows.x[i]);
  __syncthreads();  // stage 1 and the scratch are free again

  const int my_row = warp_row0 + lane / 2;  // the row whose softmax this lane helps with
  const int my_pos = my_row < n_rows ? max(sq.start + my_row / group, -1) : -1;
  float m = -INFINITY, l = 0.0f;
  FragAcc o[kDFrags];
  NS_UNROLL
  for (int f = 0; f < kDFrags; ++f) wmma::fill_fragment(o[f], 0.0f);

  for (int t = 0; t < tiles; ++t) {
    T* const k_s = stages + (t % 2) * 2 * kBc * ld;
    T* const v_s = k_s + kBc * ld;
    if (t + 1 < tiles) {
      // The other stage was last read in iteration t - 1 (stage 1 by the Q loads), which
      // ended at a barrier.
      T* const next = stages + ((t + 1) % 2) * 2 * kBc * ld;
      load_kv_tile(k_cache, v_cache, seq, (t + 1) * kBc, kv_end, kv_stride, head_off, head_dim,
                   ld, next, next + kBc * ld);
      __pipeline_commit();
      __pipeline_wait_prior(1);  // tile t has landed; tile t + 1 may be in flight
    } else {
      __pipeline_wait_prior(0);
    }
    __syncthreads();  // every thread's copies (and fills) of tile t are visible
    const int j0 = t * kBc;
    if (j0 <= warp_last_pos) {  // the warp: some row sees a key of this tile
      // S_i = Q_i K_jᵀ: B[kk][j] = K_j[j][kk], i.e. the K tile read col_major.
      FragAcc s[kKeyFrags];
      NS_UNROLL
      for (int jf = 0; jf < kKeyFrags; ++jf) wmma::fill_fragment(s[jf], 0.0f);
      NS_UNROLL
      for (int f = 0; f < kDFrags; ++f) {
        if (f >= d_frags) break;
        NS_UNROLL
        for (int jf = 0; jf < kKeyFrags; ++jf) {
          FragKt<T> k_frag;
          wmma::load_matrix_sync(k_frag, k_s + jf * kFrag * ld + f * kFrag, ld);
          wmma::mma_sync(s[jf], q_frag[f], k_frag, s[jf]);
        }
      }
      NS_UNROLL
      for (int jf = 0; jf < kKeyFrags; ++jf) {
        wmma::store_matrix_sync(s_w + jf * kFrag, s[jf], kLdS, wmma::mem_row_major);
      }
      __syncwarp();
      softmax_tile<T>(s_w, row_factor[warp], j0, my_pos, scale, m, l);

      // O_i = e^(m - m') O_i + P_i V_j, the factor picked per element by its row.
      NS_UNROLL
      for (int f = 0; f < kDFrags; ++f) {
        NS_UNROLL
        for (int i = 0; i < FragAcc::num_elements; ++i) o[f].x[i] *= row_factor[warp][row_of[i]];
      }
      const T* const p_w = reinterpret_cast<const T*>(s_w);  // (16, kLdP)
      NS_UNROLL
      for (int kk = 0; kk < kKeyFrags; ++kk) {
        FragA<T> p_frag;
        wmma::load_matrix_sync(p_frag, p_w + kk * kFrag, kLdP);
        NS_UNROLL
        for (int f = 0; f < kDFrags; ++f) {
          if (f >= d_frags) break;
          FragV<T> v_frag;
          wmma::load_matrix_sync(v_frag, v_s + kk * kFrag * ld + f * kFrag, ld);
          wmma::mma_sync(o[f], p_frag, v_frag, o[f]);
        }
      }
      __syncwarp();  // P is read before the next tile's S overwrites it
    }
    __syncthreads();  // every warp is done with this stage before iteration t + 1 refills it
  }

  // O_i / l (0 for a row that saw no key) -> out, one 16 x 16 fragment at a time via s_w.
  if (warp_row0 >= n_rows) return;  // the whole warp: no row of its own
  if (lane % 2 == 0) row_factor[warp][lane / 2] = l == 0.0f ? 0.0f : 1.0f / l;
  __syncwarp();
  NS_UNROLL
  for (int f = 0; f < kDFrags; ++f) {
    if (f >= d_frags) break;
    wmma::store_matrix_sync(s_w, o[f], kLdS, wmma::mem_row_major);
    __syncwarp();
    for (int e = lane; e < kFrag * kFrag; e += 32) {
      const int r = e / kFrag, c = e % kFrag;
      if (warp_row0 + r >= n_rows) continue;
      const float inv_l = row_factor[warp][r];
      out[q_index(warp_row0 + r) * head_dim + f * kFrag + c] =
          from_float<T>(inv_l == 0.0f ? 0.0f : s_w[r * kLdS + c] * inv_l);
    }
    __syncwarp();  // read before the next fragment is stored
  }
}

}  // namespace

template <typename T, typename KV, typename Queries>
void launch_attention_prefill_v03(const T* q, const T* k_cache, const T* v_cache, const KV& kv,
                                  const Queries& queries, int batch, int max_q_len,
                                  const AttentionHeads& heads, T* out, cudaStream_t stream) {
  const int group = heads.n_heads / heads.n_kv_heads;
  const int ld = heads.head_dim + kPad;
  const std::size_t smem = 4 * static_cast<std::size_t>(kBc) * ld * sizeof(T) +
                           static_cast<std::size_t>(kWarps) * kFrag * kLdS * sizeof(float) +
                           kSmemAlign;
  const float scale = 1.0f / std::sqrt(static_cast<float>(heads.head_dim));
  const dim3 grid(kargs::blocks_for(static_cast<std::int64_t>(max_q_len) * group, kBr),
                  heads.n_kv_heads, batch);
  // Two register sizes: head_dim <= 64 needs half the fragments of 128.
  if (heads.head_dim <= 64) {
    launch(attention_prefill_kernel_v03<T, KV, Queries, 4>, grid, dim3(kThreads), smem, stream,
           q, k_cache, v_cache, kv, queries, heads.n_heads, heads.n_kv_heads, heads.head_dim,
           scale, out);
  } else {
    launch(attention_prefill_kernel_v03<T, KV, Queries, 8>, grid, dim3(kThreads), smem, stream,
           q, k_cache, v_cache, kv, queries, heads.n_heads, heads.n_kv_heads, heads.head_dim,
           scale, out);
  }
}

#define NANOSERVE_INSTANTIATE_PREFILL_V03(T)                                                  \
  template void launch_attention_prefill_v03<T, ContiguousKV, ChunkQueries>(                   \
      const T*, const T*, const T*, const ContiguousKV&, const ChunkQueries&, int, int,         \
      const AttentionHeads&, T*, cudaStream_t);                                                 \
  template void launch_attention_prefill_v03<T, PagedKV, VarlenQueries>(                       \
      const T*, const T*, const T*, const PagedKV&, const VarlenQueries&, int, int,             \
      const AttentionHeads&, T*, cudaStream_t);
NANOSERVE_INSTANTIATE_PREFILL_V03(__half)
NANOSERVE_INSTANTIATE_PREFILL_V03(__nv_bfloat16)
#undef NANOSERVE_INSTANTIATE_PREFILL_V03

}  // namespace nanoserve
