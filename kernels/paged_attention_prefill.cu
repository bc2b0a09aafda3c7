// Paged prefill attention, batched and variable-length: every sequence of the batch brings
// Q_b new tokens (a whole prompt, a chunk of one, or a single decode token) whose K/V were
// just appended behind C_b - Q_b tokens already in the cache (a prefix-cache hit, earlier
// chunks, or the whole history of a decoding sequence). One launch serves them all — the
// attention of chapter 4's mixed prefill + decode step.
//
// Versions:
//   v01  FlashAttention-2 tiling (Dao, "FlashAttention-2", 2023, Algorithm 1), the paged and
//        varlen twin of contiguous prefill v02 (attention_prefill.cu has the per-tile algebra
//        and the thread layout). What changes:
//        - varlen grid (FlashAttention's): blockIdx.z = sequence, blockIdx.x = tile of Br
//          (position, query head) rows of that sequence's GQA group; cu_seqlens_q locates its
//          rows in the packed q, and tiles past a shorter sequence's rows exit at once;
//        - paged gather: before each tile of Bc = 32 keys, 32 threads translate the keys'
//          positions into cache rows through the block table (one lookup per key per tile,
//          shared by the K and V loads and by all head_dim elements), so the tile loads stay
//          coalesced along head_dim within each key row;
//        - positions: row t of sequence b sits at C_b - Q_b + t, so the causal mask covers
//          the cached prefix (all visible) and the new tokens (visible up to the row's own).
//
// Caveats: as contiguous prefill v02 (fp32 CUDA cores, no tensor cores); a decode row
// (Q_b = 1) fills only `group` of the Br rows of its tile, so decode-only batches belong to
// the paged decode kernel.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "kernels/dtype.cuh"
#include "kernels/kernel_args.h"
#include "kernels/paged_attention.h"
#include "kernels/paged_kv.cuh"
#include "kernels/reduce.cuh"

namespace nanoserve {
namespace {

constexpr int kPrefillWarps = 4;
constexpr int kBc = 32;  // keys per tile: one per lane

// Marks in the tile's slot list: a key whose block id is outside the pool (read as NaN) and
// a key past the tile's end (read as 0).
constexpr std::int64_t kBadBlock = -1;
constexpr std::int64_t kNoKey = -2;

// Copies keys (or values) of KV head g at the tile's slots into the rotated tile as fp32
// (element e of tile row c at c * head_dim + (e + c) % head_dim: conflict-free column reads,
// see attention_prefill.cu).
template <typename T>
__device__ __forceinline__ void load_paged_tile(const T* __restrict__ cache,
                                                const std::int64_t* slots, int g, int n_kv_heads,
                                                int head_dim, float* tile) {
  for (int idx = threadIdx.x; idx < kBc * head_dim; idx += blockDim.x) {
    const int c = idx / head_dim, e = idx % head_dim;  // consecutive threads: consecutive e
    const std::int64_t slot = slots[c];
    const float val = slot >= 0           ? to_float(cache[(slot * n_kv_heads + g) * head_dim + e])
                      : slot == kBadBlock ? NAN
                                          : 0.0f;
    int rotated = e + c % head_dim;
    if (rotated >= head_dim) rotated -= head_dim;
    tile[c * head_dim + rotated] = val;
  }
}

// q (total_q, n_heads, head_dim), cu_seqlens_q (batch + 1), pools (num_blocks, block_size,
// n_kv_heads, head_dim), block_tables (batch, max_blocks), context_lens (batch),
// out (total_q, n_heads, head_dim); grid (ceil(max_q_len * group / Br), n_kv_heads, batch),
// block (kPrefillWarps * 32), dynamic smem (Br * head_dim + kBc * head_dim + Br * kBc) floats.
template <typename T, int kRowsPerWarp, int kDimsPerLane>
__global__ void paged_attention_prefill_kernel_v01(
    const float* __restrict__ q, const int* __restrict__ cu_seqlens_q, int total_q,
    const T* __restrict__ k_cache, const T* __restrict__ v_cache,
    const int* __restrict__ block_tables, const int* __restrict__ context_lens, int num_blocks,
    FastDivmod block_size, int max_blocks, int n_heads, int n_kv_heads, int head_dim, float scale,
    float* __restrict__ out) {
  constexpr int kBr = kPrefillWarps * kRowsPerWarp;
  NS_DYNAMIC_SHARED(float, smem);
  float* q_tile = smem;                      // (Br, head_dim)   Q_i
  float* kv_tile = q_tile + kBr * head_dim;  // (Bc, head_dim)   K_j, then V_j, rows rotated
  float* p_tile = kv_tile + kBc * head_dim;  // (Br, Bc)         P_ij
  __shared__ std::int64_t tile_slots[kBc];   // (Bc) cache row of each key of the tile

  // This block's sequence and rows; cu_seqlens_q is device data, so clamp it into q.
  const int group = n_heads / n_kv_heads;
  const int g = blockIdx.y, b = blockIdx.z;
  const int q_begin = min(max(cu_seqlens_q[b], 0), total_q);
  const int n_q = min(max(cu_seqlens_q[b + 1], q_begin), total_q) - q_begin;
  const int n_rows = n_q * group;  // packed rows: row = t * group + (h - g * group)
  const int row0 = blockIdx.x * kBr;
  if (row0 >= n_rows) return;  // whole block: past this sequence's rows
  const int ctx = min(max(context_lens[b], 0), max_blocks * block_size.divisor);
  const int start = ctx - n_q;  // position of new token 0 (negative only for bad lengths)
  const int* table = block_tables + static_cast<std::int64_t>(b) * max_blocks;  // (max_blocks)
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;

  // Q_i, zero rows past the end.
  for (int idx = threadIdx.x; idx < kBr * head_dim; idx += blockDim.x) {
    const int row = row0 + idx / head_dim, e = idx % head_dim;
    const int t = row / group, h = g * group + row % group;
    q_tile[idx] = row < n_rows
                      ? q[(static_cast<std::int64_t>(q_begin + t) * n_heads + h) * head_dim + e]
                      : 0.0f;
  }

  // Per row of this warp: its position (-1 past the end: nothing visible), m, l, O.
  int pos[kRowsPerWarp];
  float m[kRowsPerWarp], l[kRowsPerWarp], o[kRowsPerWarp][kDimsPerLane];
  NS_UNROLL
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int row = row0 + warp * kRowsPerWarp + r;
    pos[r] = row < n_rows ? max(start + row / group, -1) : -1;
    m[r] = -INFINITY;
    l[r] = 0.0f;
    NS_UNROLL
    for (int d = 0; d < kDimsPerLane; ++d) o[r][d] = 0.0f;
  }
  // Keys the block needs: up to the position of its last row (causal).
  const int kv_end = max(start + (min(row0 + kBr, n_rows) - 1) / group + 1, 0);

  for (int j0 = 0; j0 < kv_end; j0 += kBc) {
    // The tile's cache rows. Safe to overwrite: every thread passed the barrier after the
    // previous tile's V load, the last reader of tile_slots.
    if (threadIdx.x < kBc) {
      const int j = j0 + threadIdx.x;
      const std::int64_t slot = j < kv_end ? paged_slot(table, block_size, num_blocks, j) : kNoKey;
      tile_slots[threadIdx.x] = slot;  // paged_slot's -1 is kBadBlock
    }
    __syncthreads();  // Q_i and the slots stored / V_{j-1} consumed by every warp
    load_paged_tile(k_cache, tile_slots, g, n_kv_heads, head_dim, kv_tile);
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
      const float p = visible ? __expf(s_val - m_new) : 0.0f;
      const float corr = m[r] == -INFINITY ? 0.0f : __expf(m[r] - m_new);
      l[r] = l[r] * corr + warp_sum(p);
      NS_UNROLL
      for (int d = 0; d < kDimsPerLane; ++d) o[r][d] *= corr;
      m[r] = m_new;
      p_tile[(warp * kRowsPerWarp + r) * kBc + lane] = p;
    }
    __syncthreads();  // every warp is done with K_j
    load_paged_tile(v_cache, tile_slots, g, n_kv_heads, head_dim, kv_tile);
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

  // O_i / l (0 for a row that saw no key), back to (total_q, n_heads, head_dim).
  NS_UNROLL
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int row = row0 + warp * kRowsPerWarp + r;
    if (row >= n_rows) continue;
    const int t = row / group, h = g * group + row % group;
    float* out_row = out + (static_cast<std::int64_t>(q_begin + t) * n_heads + h) * head_dim;
    NS_UNROLL
    for (int d = 0; d < kDimsPerLane; ++d) {
      const int e = lane + 32 * d;
      if (e < head_dim) out_row[e] = l[r] == 0.0f ? 0.0f : o[r][d] / l[r];
    }
  }
}

template <typename T, int kRowsPerWarp, int kDimsPerLane>
void launch_prefill_v01(const float* q, const int* cu_seqlens_q, int total_q, int max_q_len,
                        const PagedKVView<T>& kv, const DeviceBlockTables& tables,
                        const AttentionHeads& heads, float* out, cudaStream_t stream) {
  constexpr int kBr = kPrefillWarps * kRowsPerWarp;
  const int group = heads.n_heads / heads.n_kv_heads;
  const std::size_t smem =
      (static_cast<std::size_t>(kBr + kBc) * heads.head_dim + kBr * kBc) * sizeof(float);
  const float scale = 1.0f / std::sqrt(static_cast<float>(heads.head_dim));
  const unsigned row_tiles = kargs::blocks_for(static_cast<std::int64_t>(max_q_len) * group, kBr);
  launch(paged_attention_prefill_kernel_v01<T, kRowsPerWarp, kDimsPerLane>,
         dim3(row_tiles, heads.n_kv_heads, tables.batch), dim3(kPrefillWarps * 32), smem, stream, q,
         cu_seqlens_q, total_q, kv.k_cache, kv.v_cache, tables.block_tables, tables.context_lens,
         kv.num_blocks, FastDivmod(kv.block_size), tables.max_blocks_per_seq, heads.n_heads,
         heads.n_kv_heads, heads.head_dim, scale, out);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// launchers

template <typename T>
void launch_paged_attention_prefill(const float* q, const int* cu_seqlens_q, int total_q,
                                    int max_q_len, const PagedKVView<T>& kv,
                                    const DeviceBlockTables& tables, const AttentionHeads& heads,
                                    float* out, cudaStream_t stream, int version) {
  constexpr const char* kOp = "launch_paged_attention_prefill";
  check_paged_args(kOp, kv, tables, heads);
  kargs::require_at_least(kOp, "total_q", total_q, 0);
  kargs::require_at_least(kOp, "max_q_len", max_q_len, 1);
  kargs::require(heads.n_kv_heads <= 65535, kOp,
                 "n_kv_heads = " + std::to_string(heads.n_kv_heads) +
                     " must be <= 65535 (a grid y dimension)");
  kargs::require_version(kOp, version, kPagedPrefillVersions);
  if (tables.batch == 0 || total_q == 0) return;
  if (heads.head_dim <= 128) {
    // Br = 16 rows: (16 + 32) * 128 + 16 * 32 floats = 26 KiB of shared memory at head_dim 128.
    launch_prefill_v01<T, 4, 4>(q, cu_seqlens_q, total_q, max_q_len, kv, tables, heads, out,
                                stream);
  } else {
    // Br = 8 rows keeps head_dim 256 at (8 + 32) * 256 + 8 * 32 floats = 41 KiB.
    launch_prefill_v01<T, 2, 8>(q, cu_seqlens_q, total_q, max_q_len, kv, tables, heads, out,
                                stream);
  }
}

#define NANOSERVE_INSTANTIATE_PAGED_PREFILL(T)                                              \
  template void launch_paged_attention_prefill<T>(                                          \
      const float*, const int*, int, int, const PagedKVView<T>&, const DeviceBlockTables&, \
      const AttentionHeads&, float*, cudaStream_t, int);
NANOSERVE_INSTANTIATE_PAGED_PREFILL(float)
NANOSERVE_INSTANTIATE_PAGED_PREFILL(__half)
NANOSERVE_INSTANTIATE_PAGED_PREFILL(__nv_bfloat16)
#undef NANOSERVE_INSTANTIATE_PAGED_PREFILL

}  // namespace nanoserve
