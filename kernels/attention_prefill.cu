// Prefill attention: many new query positions per sequence, causal, GQA. One source for both
// KV layouts (kernels/attention_kv.cuh):
//   - contiguous (chapter 1, launch_attention_prefill): one sequence's chunk of n_queries
//     tokens at positions start .. start + n_queries - 1 (ChunkQueries);
//   - paged, batched and variable-length (chapter 2 and 4, launch_paged_attention_prefill):
//     sequence b brings Q_b new tokens (a whole prompt, a chunk of one, or a single decode
//     token) behind C_b - Q_b tokens already in the cache (a prefix-cache hit, earlier chunks),
//     its rows located in the packed q by cu_seqlens_q (VarlenQueries) — one launch for the
//     mixed prefill + decode step of chapter 4.
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
//        Grid (ceil(max_q_len * group / Br), n_kv_heads, batch): the tiles past a shorter
//        sequence's rows exit at once (FlashAttention's varlen grid). Before each tile, 32
//        threads translate its keys into cache rows (paged: through the block table), one
//        lookup per key per tile shared by the K and V loads and all head_dim elements.
//
//   v03  v02 on the tensor cores (kernels/attention_prefill_tc.cu): QK^T and PV as WMMA
//        m16n16k16 products with fp32 accumulators, Br = 64 rows (4 warps x 16), K/V tiles of
//        Bc = 32 keys double-buffered through __pipeline_memcpy_async, the online softmax in
//        fp32 with P rounded to the input type for the second product. Needs KV and activations
//        both fp16 or both bf16 and head_dim a multiple of 16 up to 128; version 0 picks it
//        then (attention_prefill_auto_version) and v02 otherwise (fp32: the exact mode; the
//        head widths 8 of stories260K and 256).
//
// v02 threads: 4 warps, each owning kRowsPerWarp rows. S: lane c computes column c (key
// j0 + c) of its rows, reading the key tile from shared memory. O: lane c owns output values
// c, c + 32, ... of its rows. The K/V tile rows are stored rotated by their index
// (element e of row c at c*head_dim + (e + c) % head_dim), so 32 lanes reading the same e of
// 32 different rows hit 32 different banks when head_dim is a multiple of 32, without padding.
//
// Caveats: fp32 CUDA-core arithmetic (no tensor cores); K and V share one tile buffer (four
// barriers per tile) to keep head_dim 256 inside the 48 KiB default of shared memory; a decode
// row (Q_b = 1) fills only `group` of the Br rows of its tile, so decode-only batches belong to
// the decode kernel.
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

#include "kernels/attention.h"
#include "kernels/attention_kv.cuh"
#include "kernels/attention_naive.cuh"
#include "kernels/attention_prefill_tc.h"
#include "kernels/kernel_args.h"
#include "kernels/paged_attention.h"
#include "kernels/reduce.cuh"

namespace nanoserve {
namespace {

constexpr int kPrefillWarps = 4;
constexpr int kBc = 32;  // keys per tile: one per lane

// Marks in a tile's row list: a key whose block id is outside the pool (read as NaN) and a
// key past the tile's end (read as 0).
constexpr std::int64_t kBadRow = -1;
constexpr std::int64_t kNoKey = -2;

// ---------------------------------------------------------------------------------------------
// v01: attention_kernel_v01 (attention_naive.cuh) with ChunkQueries or VarlenQueries.

// ---------------------------------------------------------------------------------------------
// v02

// Copies keys (or values) of KV head g at the tile's cache rows into the rotated tile as fp32.
template <typename T>
__device__ __forceinline__ void load_kv_tile(const T* __restrict__ cache,
                                             const std::int64_t* tile_rows, int g, int n_kv_heads,
                                             int head_dim, float* tile) {
  for (int idx = threadIdx.x; idx < kBc * head_dim; idx += blockDim.x) {
    const int c = idx / head_dim, e = idx % head_dim;  // consecutive threads: consecutive e
    const std::int64_t row = tile_rows[c];
    const float val = row >= 0          ? to_float(cache[(row * n_kv_heads + g) * head_dim + e])
                      : row == kBadRow  ? NAN
                                        : 0.0f;
    int rotated = e + c % head_dim;
    if (rotated >= head_dim) rotated -= head_dim;
    tile[c * head_dim + rotated] = val;
  }
}

// q, out (rows, n_heads, head_dim) packed as `queries` says; k_cache, v_cache addressed by
// `kv`; grid (ceil(max_q_len * group / Br), n_kv_heads, batch), block (kPrefillWarps * 32),
// dynamic smem (Br * head_dim + kBc * head_dim + Br * kBc) floats.
template <typename T, typename A, typename KV, typename Queries, int kRowsPerWarp,
          int kDimsPerLane>
__global__ void attention_prefill_kernel_v02(const A* __restrict__ q,
                                             const T* __restrict__ k_cache,
                                             const T* __restrict__ v_cache, KV kv,
                                             Queries queries, int n_heads, int n_kv_heads,
                                             int head_dim, float scale, A* __restrict__ out) {
  constexpr int kBr = kPrefillWarps * kRowsPerWarp;
  NS_DYNAMIC_SHARED(float, smem);
  float* q_tile = smem;                      // (Br, head_dim)   Q_i
  float* kv_tile = q_tile + kBr * head_dim;  // (Bc, head_dim)   K_j, then V_j, rows rotated
  float* p_tile = kv_tile + kBc * head_dim;  // (Br, Bc)         P_ij
  __shared__ std::int64_t tile_rows[kBc];    // (Bc) cache row of each key of the tile

  // This block's sequence and rows.
  const int group = n_heads / n_kv_heads;
  const int g = blockIdx.y, b = blockIdx.z;
  const SeqQueries sq = queries.seq(b);
  const int n_rows = sq.n_q * group;  // packed rows: row = t * group + (h - g * group)
  const int row0 = blockIdx.x * kBr;
  if (row0 >= n_rows) return;  // whole block: past this sequence's rows
  const typename KV::Seq seq = kv.seq(b);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const auto q_index = [&](int row) {  // (rows, n_heads) index of packed row `row`
    return static_cast<std::int64_t>(sq.q_begin + row / group) * n_heads + g * group + row % group;
  };

  // Q_i, zero rows past the end.
  for (int idx = threadIdx.x; idx < kBr * head_dim; idx += blockDim.x) {
    const int row = row0 + idx / head_dim, e = idx % head_dim;
    q_tile[idx] = row < n_rows ? to_float(q[q_index(row) * head_dim + e]) : 0.0f;
  }

  // Per row of this warp: its position (-1 past the end: nothing visible), m, l, O.
  int pos[kRowsPerWarp];
  float m[kRowsPerWarp], l[kRowsPerWarp], o[kRowsPerWarp][kDimsPerLane];
  NS_UNROLL
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int row = row0 + warp * kRowsPerWarp + r;
    pos[r] = row < n_rows ? max(sq.start + row / group, -1) : -1;
    m[r] = -INFINITY;
    l[r] = 0.0f;
    NS_UNROLL
    for (int d = 0; d < kDimsPerLane; ++d) o[r][d] = 0.0f;
  }
  // Keys the block needs: up to the position of its last row (causal).
  const int kv_end = max(sq.start + (min(row0 + kBr, n_rows) - 1) / group + 1, 0);

  for (int j0 = 0; j0 < kv_end; j0 += kBc) {
    // The tile's cache rows. Safe to overwrite: every thread passed the barrier after the
    // previous tile's V load, the last reader of tile_rows.
    if (threadIdx.x < kBc) {
      const int j = j0 + threadIdx.x;
      tile_rows[threadIdx.x] = j < kv_end ? seq.row(j) : kNoKey;  // a row of -1 is kBadRow
    }
    __syncthreads();  // Q_i and the rows stored / V_{j-1} consumed by every warp
    load_kv_tile(k_cache, tile_rows, g, n_kv_heads, head_dim, kv_tile);
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
    load_kv_tile(v_cache, tile_rows, g, n_kv_heads, head_dim, kv_tile);
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

  // O_i / l (0 for a row that saw no key), back to (rows, n_heads, head_dim).
  NS_UNROLL
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int row = row0 + warp * kRowsPerWarp + r;
    if (row >= n_rows) continue;
    A* out_row = out + q_index(row) * head_dim;
    NS_UNROLL
    for (int d = 0; d < kDimsPerLane; ++d) {
      const int e = lane + 32 * d;
      if (e < head_dim) out_row[e] = from_float<A>(l[r] == 0.0f ? 0.0f : o[r][d] / l[r]);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// launchers

template <typename T, typename A, typename KV, typename Queries, int kRowsPerWarp,
          int kDimsPerLane>
void launch_prefill_v02(const A* q, const T* k_cache, const T* v_cache, const KV& kv,
                        const Queries& queries, int batch, int max_q_len,
                        const AttentionHeads& heads, A* out, cudaStream_t stream) {
  constexpr int kBr = kPrefillWarps * kRowsPerWarp;
  const int group = heads.n_heads / heads.n_kv_heads;
  const std::size_t smem =
      (static_cast<std::size_t>(kBr + kBc) * heads.head_dim + kBr * kBc) * sizeof(float);
  const float scale = 1.0f / std::sqrt(static_cast<float>(heads.head_dim));
  const unsigned row_tiles = kargs::blocks_for(static_cast<std::int64_t>(max_q_len) * group, kBr);
  launch(attention_prefill_kernel_v02<T, A, KV, Queries, kRowsPerWarp, kDimsPerLane>,
         dim3(row_tiles, heads.n_kv_heads, batch), dim3(kPrefillWarps * 32), smem, stream, q,
         k_cache, v_cache, kv, queries, heads.n_heads, heads.n_kv_heads, heads.head_dim, scale,
         out);
}

// Version dispatch for either layout (the public launchers checked the layout's arguments):
// `batch` sequences of at most `max_q_len` new tokens, contexts of at most `max_keys` keys.
template <typename T, typename A, typename KV, typename Queries>
void run_prefill(const char* op, const A* q, const T* k_cache, const T* v_cache,
                 const KV& kv, const Queries& queries, int batch, int max_q_len, int max_keys,
                 const AttentionHeads& heads, A* out, cudaStream_t stream, int version) {
  kargs::require(heads.n_kv_heads <= 65535, op,
                 "n_kv_heads = " + std::to_string(heads.n_kv_heads) +
                     " must be <= 65535 (a grid y dimension)");
  kargs::require_version(op, version, kAttentionPrefillVersions);
  if (version == 0) {
    version = attention_prefill_auto_version(dtype_of<T>(), dtype_of<A>(), heads.head_dim);
  }
  constexpr bool kTensorCoreTypes = std::is_same<T, A>::value && !std::is_same<T, float>::value;
  if (version == 3) {
    kargs::require(kTensorCoreTypes, op,
                   std::string("version 3 runs on the tensor cores: it needs KV and activations "
                               "both fp16 or both bf16, got ") +
                       dtype_name(dtype_of<T>()) + " KV and " + dtype_name(dtype_of<A>()) +
                       " activations");
    kargs::require(attention_prefill_v03_supports(heads.head_dim), op,
                   "version 3 needs head_dim = " + std::to_string(heads.head_dim) +
                       " to be a multiple of 16 in [" + std::to_string(kPrefillV03MinHeadDim) +
                       ", " + std::to_string(kPrefillV03MaxHeadDim) + "]");
  }
  if (batch == 0 || max_q_len == 0) return;
  if (version == 3) {
    if constexpr (kTensorCoreTypes) {  // only the pairs that can take it are instantiated
      launch_attention_prefill_v03<T>(q, k_cache, v_cache, kv, queries, batch, max_q_len, heads,
                                      out, stream);
    }
  } else if (version == 1) {
    launch_attention_v01(op, q, k_cache, v_cache, kv, queries, batch, max_q_len, max_keys, heads,
                         out, stream);
  } else if (heads.head_dim <= 128) {
    // Br = 16 rows: (16 + 32) * 128 + 16 * 32 floats = 26 KiB of shared memory at head_dim 128.
    launch_prefill_v02<T, A, KV, Queries, 4, 4>(q, k_cache, v_cache, kv, queries, batch, max_q_len,
                                             heads, out, stream);
  } else {
    // Br = 8 rows keeps head_dim 256 at (8 + 32) * 256 + 8 * 32 floats = 41 KiB.
    launch_prefill_v02<T, A, KV, Queries, 2, 8>(q, k_cache, v_cache, kv, queries, batch, max_q_len,
                                             heads, out, stream);
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// dispatch: the two layouts

int attention_prefill_auto_version(DType kv, DType act, int head_dim) {
  const bool tensor_core_types = kv == act && kv != DType::kF32;
  return tensor_core_types && attention_prefill_v03_supports(head_dim) ? 3 : 2;
}

template <typename T, typename A>
void launch_attention_prefill(const nondeduced_t<A>* q, const T* k_cache, const T* v_cache,
                              int n_queries,
                              int start, int max_seq_len, const AttentionHeads& heads,
                              nondeduced_t<A>* out,
                              cudaStream_t stream, int version) {
  constexpr const char* kOp = "launch_attention_prefill";
  kargs::require_at_least(kOp, "n_queries", n_queries, 0);
  kargs::require_at_least(kOp, "start", start, 0);
  kargs::require_at_least(kOp, "max_seq_len", max_seq_len, 1);
  kargs::require(static_cast<std::int64_t>(start) + n_queries <= max_seq_len, kOp,
                 "start + n_queries = " + std::to_string(std::int64_t{start} + n_queries) +
                     " exceeds max_seq_len = " + std::to_string(max_seq_len));
  check_attention_heads(kOp, heads);
  run_prefill(kOp, q, k_cache, v_cache, ContiguousKV{max_seq_len}, ChunkQueries{n_queries, start},
              1, n_queries, start + n_queries, heads, out, stream, version);
}

template <typename T, typename A>
void launch_paged_attention_prefill(const nondeduced_t<A>* q, const int* cu_seqlens_q, int total_q,
                                    int max_q_len, const PagedKVView<T>& kv,
                                    const DeviceBlockTables& tables, const AttentionHeads& heads,
                                    nondeduced_t<A>* out, cudaStream_t stream, int version) {
  constexpr const char* kOp = "launch_paged_attention_prefill";
  check_paged_args(kOp, kv, tables, heads);
  kargs::require_at_least(kOp, "total_q", total_q, 0);
  kargs::require_at_least(kOp, "max_q_len", max_q_len, 1);
  const PagedKV addressing = paged_addressing(kv, tables);
  const VarlenQueries queries{cu_seqlens_q, total_q, tables.context_lens,
                              addressing.max_context()};
  run_prefill(kOp, q, kv.k_cache, kv.v_cache, addressing, queries, total_q == 0 ? 0 : tables.batch,
              max_q_len, addressing.max_context(), heads, out, stream, version);
}

#define NANOSERVE_INSTANTIATE_PREFILL(T, A)                                                   \
  template void launch_attention_prefill<T, A>(const A*, const T*, const T*, int, int, int,      \
                                               const AttentionHeads&, A*, cudaStream_t, int);    \
  template void launch_paged_attention_prefill<T, A>(                                            \
      const A*, const int*, int, int, const PagedKVView<T>&, const DeviceBlockTables&,           \
      const AttentionHeads&, A*, cudaStream_t, int);
NANOSERVE_FOR_EACH_STORAGE_PAIR(NANOSERVE_INSTANTIATE_PREFILL)
#undef NANOSERVE_INSTANTIATE_PREFILL

}  // namespace nanoserve
