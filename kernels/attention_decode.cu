// Decode attention: q_len (>= 1) new queries per sequence attend causally to its cached keys,
// GQA. One source for both KV layouts (kernels/attention_kv.cuh), which differ only in where
// key j of sequence b lives:
//
//     contiguous (chapter 1, launch_attention_decode, q_len 1)   row(j) = b * max_seq_len + j
//     paged (chapter 2, launch_paged_attention_decode)           row(j) = paged slot of j
//
// Versions:
//   v01  one block per (sequence, query, query head): scores for all keys in shared memory,
//        block-wide softmax, weighted sum of V (attention_naive.cuh, shared with prefill v01).
//   v02  one block per (sequence, KV head, <= 8 (query, head) rows, chunk of keys). Three
//        ideas over v01:
//        - GQA sharing: the block serves all query heads of the KV head's group (and, for
//          speculative verification, all q_len positions, each masked at its own position),
//          so each K/V byte leaves DRAM once per step instead of once per row;
//        - streaming: 16-byte loads, a group of lanes per key row, an online softmax (running
//          max m and sum l per row, Milakov & Gimelshein 2018) — no score buffer, any length;
//        - split-K (flash-decoding, Dao et al. 2023): with a workspace, a long context is cut
//          into chunks of keys (paged: whole KV blocks) handled by parallel blocks, and a small
//          combine kernel merges their (m, l, O) exactly, so a few long sequences still fill
//          the whole GPU. How many chunks follows the occupancy of the device
//          (attention_decode_split.cu: enough blocks for the SMs, none for a long batch or a
//          short context), unless the caller fixes keys_per_split.
//        Paging costs one L1-cached table load per key and a multiply-high for j / block_size
//        (FastDivmod): next to the 2 x 256 bytes of K and V a key row carries at head_dim 128 in
//        fp16, a few percent of the instructions.
//
// Lane layout of v02 for one key row (head_dim = 128, fp16: 16 vectors of 8 halves):
//
//     warp lanes  0 ..15  -> key j     lane s loads vector s (elements 8s .. 8s+7) of k_j, v_j
//     warp lanes 16 ..31  -> key j+1
//
// A lane owns kLaneElems = 8 elements of every row (fp32: two 4-float vectors, L apart), so
// L = lanes per key = next_pow2(head_dim / 8) and a warp takes 32 / L keys per step; the score
// is a dot product over the L lanes (log2 L xor-shuffles), and each lane keeps the softmax state
// and its 8 output elements for each row in registers.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

#include "kernels/attention.h"
#include "kernels/attention_kv.cuh"
#include "kernels/attention_naive.cuh"
#include "kernels/kernel_args.h"
#include "kernels/online_softmax.cuh"
#include "kernels/paged_attention.h"
#include "kernels/reduce.cuh"
#include "kernels/vec_load.cuh"

namespace nanoserve {
namespace {

constexpr int kDecodeWarps = 4;      // v02 warps per block
constexpr int kLaneElems = 8;        // v02: elements of a head row owned by one lane
constexpr int kDecodeUnroll = 2;     // v02: key steps whose loads are issued together
constexpr int kMaxRowsPerBlock = kDecodeMaxRowsPerBlock;  // v02: (query, head) rows per block
constexpr int kMaxQLen = 64;         // queries per sequence (speculative γ + 1 is ~2-9)

// ---------------------------------------------------------------------------------------------
// v01: attention_kernel_v01 (attention_naive.cuh) with FixedQueries.

// ---------------------------------------------------------------------------------------------
// v02

// q, out (batch, q_len, n_heads, head_dim); k_cache, v_cache addressed by `kv`; with
// num_splits = gridDim.x > 1 the results go to part_o (batch, q_len, n_heads, num_splits,
// head_dim) and part_ml (batch, q_len, n_heads, num_splits, 2) instead.
// The rows of a (sequence, KV head) are r = i * group + hh (query i, head g * group + hh),
// cut into chunks of kMaxRows. grid (num_splits, n_kv_heads * row_chunks, batch),
// block (kDecodeWarps * 32), dynamic smem kDecodeWarps * kMaxRows * (head_dim + 2) floats.
template <typename T, typename A, typename KV, int kMaxRows>
__global__ void attention_decode_kernel_v02(
    const A* __restrict__ q, const T* __restrict__ k_cache, const T* __restrict__ v_cache,
    KV kv, FixedQueries queries, int n_heads, int n_kv_heads, int head_dim, int lanes_per_key,
    int keys_per_split, float scale, A* __restrict__ out, float* __restrict__ part_o,
    float* __restrict__ part_ml) {
  constexpr int kVec = kVec16<T>;                  // elements per 16-byte load
  constexpr int kVecsPerLane = kLaneElems / kVec;  // 1 (fp16/bf16) or 2 (fp32)
  NS_DYNAMIC_SHARED(float, smem);

  // Which sequence, KV head, rows and keys this block owns.
  const int group = n_heads / n_kv_heads, q_len = queries.q_len;
  const int rows_total = q_len * group;
  const int row_chunks = (rows_total + kMaxRows - 1) / kMaxRows;
  const int split = blockIdx.x, num_splits = gridDim.x, b = blockIdx.z;
  const int g = blockIdx.y / row_chunks;
  const int r0 = (blockIdx.y % row_chunks) * kMaxRows;  // first row
  const int n_r = min(kMaxRows, rows_total - r0);       // rows served
  const int first_pos = queries.seq(b).start;               // position of query 0
  const int last_pos = first_pos + (r0 + n_r - 1) / group;  // of this block's last row
  const int key_begin = split * keys_per_split;
  const int key_end = min(last_pos + 1, key_begin + keys_per_split);
  // Output row rr of this block: (batch, q_len, n_heads) index of (b, query, head).
  const auto out_index = [&](int rr) {
    const int r = r0 + rr;
    return (static_cast<std::int64_t>(b) * q_len + r / group) * n_heads + g * group + r % group;
  };
  if (key_begin >= key_end) {  // whole block: no visible key (or a chunk past the end)
    if (num_splits == 1) {
      for (int idx = threadIdx.x; idx < n_r * head_dim; idx += blockDim.x) {
        out[out_index(idx / head_dim) * head_dim + idx % head_dim] = from_float<A>(0.0f);
      }
    }
    return;  // the combine kernel skips chunks past a row's position
  }

  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int L = lanes_per_key, sub = lane % L, slot = lane / L;
  const int n_vec = head_dim / kVec;
  const int keys_per_warp_step = 32 / L;
  const int keys_per_step = kDecodeWarps * keys_per_warp_step;
  const std::int64_t kv_stride = static_cast<std::int64_t>(n_kv_heads) * head_dim;
  const std::int64_t head_off = static_cast<std::int64_t>(g) * head_dim;
  const typename KV::Seq seq = kv.seq(b);

  // This lane's slice of each row's query, the row's position and running softmax state.
  int pos[kMaxRows];
  float q_r[kMaxRows][kLaneElems], acc[kMaxRows][kLaneElems], m[kMaxRows], l[kMaxRows];
  NS_UNROLL
  for (int rr = 0; rr < kMaxRows; ++rr) {
    const bool row_ok = rr < n_r;  // rows past the chunk: no visible key, query 0
    pos[rr] = row_ok ? first_pos + (r0 + rr) / group : -1;
    m[rr] = -INFINITY;
    l[rr] = 0.0f;
    const A* q_row = q + (row_ok ? out_index(rr) : 0) * head_dim;  // (head_dim)
    NS_UNROLL
    for (int i = 0; i < kVecsPerLane; ++i) {
      const int vi = sub + i * L;
      NS_UNROLL
      for (int e = 0; e < kVec; ++e) {
        q_r[rr][i * kVec + e] = row_ok && vi < n_vec ? to_float(q_row[vi * kVec + e]) : 0.0f;
        acc[rr][i * kVec + e] = 0.0f;
      }
    }
  }

  // Stream this block's keys: each warp-step covers keys_per_warp_step keys, kDecodeUnroll
  // steps' loads are issued before any of them is used. The loop bound depends only on the
  // warp, so every lane reaches every shuffle.
  for (int base = key_begin + warp * keys_per_warp_step; base < key_end;
       base += kDecodeUnroll * keys_per_step) {
    uint4 k_raw[kDecodeUnroll][kVecsPerLane], v_raw[kDecodeUnroll][kVecsPerLane];
    int key[kDecodeUnroll];
    NS_UNROLL
    for (int u = 0; u < kDecodeUnroll; ++u) {
      key[u] = base + u * keys_per_step + slot;
      const bool valid = key[u] < key_end;
      const std::int64_t row = valid ? seq.row(key[u]) : -1;
      NS_UNROLL
      for (int i = 0; i < kVecsPerLane; ++i) {
        const int vi = sub + i * L;
        if (valid && vi < n_vec && row >= 0) {
          const std::int64_t off = row * kv_stride + head_off + vi * kVec;
          k_raw[u][i] = *reinterpret_cast<const uint4*>(k_cache + off);
          v_raw[u][i] = *reinterpret_cast<const uint4*>(v_cache + off);
        } else {  // a bad block id: NaN, never memory outside the pool; past the end: 0
          k_raw[u][i] = valid && vi < n_vec ? nan_vector() : make_uint4(0, 0, 0, 0);
          v_raw[u][i] = k_raw[u][i];
        }
      }
    }
    NS_UNROLL
    for (int u = 0; u < kDecodeUnroll; ++u) {
      float k_f[kLaneElems], v_f[kLaneElems];
      NS_UNROLL
      for (int i = 0; i < kVecsPerLane; ++i) {
        NS_UNROLL
        for (int e = 0; e < kVec; ++e) {
          k_f[i * kVec + e] = unpack16<T>(k_raw[u][i], e);
          v_f[i * kVec + e] = unpack16<T>(v_raw[u][i], e);
        }
      }
      NS_UNROLL
      for (int rr = 0; rr < kMaxRows; ++rr) {
        float dot = 0.0f;
        NS_UNROLL
        for (int k = 0; k < kLaneElems; ++k) dot += q_r[rr][k] * k_f[k];
        dot = group_sum(dot, L);  // over the L lanes of this key
        if (key[u] < key_end && key[u] <= pos[rr]) {  // causal among the q_len queries
          online_softmax_add(m[rr], l[rr], acc[rr], dot * scale, v_f);
        }
      }
    }
  }

  // Merge the key slots of the warp (lanes `sub` apart by multiples of L hold the same
  // elements of different keys' partial sums), then the warps through shared memory.
  for (int offset = L; offset < 32; offset *= 2) {
    NS_UNROLL
    for (int rr = 0; rr < kMaxRows; ++rr) merge_softmax_lanes(m[rr], l[rr], acc[rr], offset);
  }
  float* o_s = smem;                                       // (warps, kMaxRows, head_dim)
  float* m_s = smem + kDecodeWarps * kMaxRows * head_dim;  // (warps, kMaxRows)
  float* l_s = m_s + kDecodeWarps * kMaxRows;              // (warps, kMaxRows)
  if (slot == 0) {
    NS_UNROLL
    for (int rr = 0; rr < kMaxRows; ++rr) {
      NS_UNROLL
      for (int i = 0; i < kVecsPerLane; ++i) {
        const int vi = sub + i * L;
        if (vi < n_vec) {
          NS_UNROLL
          for (int e = 0; e < kVec; ++e) {
            o_s[(warp * kMaxRows + rr) * head_dim + vi * kVec + e] = acc[rr][i * kVec + e];
          }
        }
      }
      if (lane == 0) {
        m_s[warp * kMaxRows + rr] = m[rr];
        l_s[warp * kMaxRows + rr] = l[rr];
      }
    }
  }
  __syncthreads();
  for (int idx = threadIdx.x; idx < n_r * head_dim; idx += blockDim.x) {
    const int rr = idx / head_dim, e = idx % head_dim;
    float m_all, l_all;
    const float o = merge_softmax_partials(m_s + rr, l_s + rr, o_s + rr * head_dim + e,
                                           kDecodeWarps, kMaxRows, kMaxRows * head_dim, m_all,
                                           l_all);
    const std::int64_t row = out_index(rr);
    if (num_splits == 1) {
      out[row * head_dim + e] = from_float<A>(l_all == 0.0f ? 0.0f : o / l_all);  // 0: pos < 0
    } else {
      const std::int64_t part = row * num_splits + split;  // (batch, q_len, n_heads, splits)
      part_o[part * head_dim + e] = o;
      if (e == 0) {
        part_ml[2 * part] = m_all;
        part_ml[2 * part + 1] = l_all;
      }
    }
  }
}

// Merges v02's chunks: for row (b, i, h) the chunks s with s * keys_per_split <= its position
// hold its keys (online_softmax.cuh). part_o (batch, q_len, n_heads, num_splits, head_dim),
// part_ml (batch, q_len, n_heads, num_splits, 2), out (batch, q_len, n_heads, head_dim);
// grid (q_len * n_heads, batch), block (128)
template <typename A>
__global__ void attention_decode_combine_kernel(const float* __restrict__ part_o,
                                                const float* __restrict__ part_ml,
                                                FixedQueries queries, int n_heads, int head_dim,
                                                int num_splits, int keys_per_split,
                                                A* __restrict__ out) {
  const int b = blockIdx.y, i = blockIdx.x / n_heads;
  const int pos = queries.seq(b).start + i;
  const int active = pos < 0 ? 0 : pos / keys_per_split + 1;
  const std::int64_t row = static_cast<std::int64_t>(b) * queries.q_len * n_heads + blockIdx.x;
  combine_split_partials(part_o + row * num_splits * head_dim, part_ml + row * num_splits * 2,
                         active, head_dim, out + row * head_dim);
}

// ---------------------------------------------------------------------------------------------
// launchers

int next_pow2(int x) {
  int p = 1;
  while (p < x) p *= 2;
  return p;
}

int num_chunks(int max_context, int keys_per_split) {
  return (max_context + keys_per_split - 1) / keys_per_split;
}

std::size_t decode_workspace_floats(const char* op, int batch, int q_len, int n_heads,
                                    int head_dim, int max_context, int keys_per_split) {
  kargs::require_at_least(op, "batch", batch, 0);
  kargs::require_at_least(op, "q_len", q_len, 0);
  kargs::require_at_least(op, "n_heads", n_heads, 0);
  kargs::require_at_least(op, "head_dim", head_dim, 0);
  kargs::require_at_least(op, "max_context", max_context, 0);
  kargs::require_at_least(op, "keys_per_split", keys_per_split, 1);
  const int splits = num_chunks(max_context, keys_per_split);
  if (splits <= 1) return 0;
  return static_cast<std::size_t>(batch) * q_len * n_heads * splits * (head_dim + 2);
}

template <typename T, typename A, typename KV, int kMaxRows>
void launch_decode_v02(const A* q, const T* k_cache, const T* v_cache, const KV& kv,
                       const FixedQueries& queries, int batch, const AttentionHeads& heads,
                       A* out, int num_splits, int keys_per_split, float* part_o,
                       float* part_ml, cudaStream_t stream) {
  const int group = heads.n_heads / heads.n_kv_heads;
  const int row_chunks = (queries.q_len * group + kMaxRows - 1) / kMaxRows;
  const int lanes_per_key = next_pow2((heads.head_dim + kLaneElems - 1) / kLaneElems);
  const std::size_t smem =
      static_cast<std::size_t>(kDecodeWarps) * kMaxRows * (heads.head_dim + 2) * sizeof(float);
  const float scale = 1.0f / std::sqrt(static_cast<float>(heads.head_dim));
  launch(attention_decode_kernel_v02<T, A, KV, kMaxRows>,
         dim3(num_splits, heads.n_kv_heads * row_chunks, batch), dim3(kDecodeWarps * 32), smem,
         stream, q, k_cache, v_cache, kv, queries, heads.n_heads, heads.n_kv_heads,
         heads.head_dim, lanes_per_key, num_splits == 1 ? kv.max_context() : keys_per_split,
         scale, out, part_o, part_ml);
  if (num_splits > 1) {
    launch(attention_decode_combine_kernel<A>, dim3(queries.q_len * heads.n_heads, batch),
           dim3(128), 0, stream, part_o, part_ml, queries, heads.n_heads, heads.head_dim,
           num_splits, keys_per_split, out);
  }
}

// The SMs the automatic split fills: the workspace's, or the current device's.
int device_sm_count(const DecodeWorkspace& workspace) {
  if (workspace.sm_count > 0) return workspace.sm_count;
  int device = 0, sms = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return std::max(sms, 1);
}

// Version dispatch for either layout (the public launchers checked the layout's arguments).
// `split_unit` is what keys_per_split must be a multiple of: the block size of a paged pool.
template <typename T, typename A, typename KV>
void run_decode(const char* op, const A* q, const T* k_cache, const T* v_cache, const KV& kv,
                const FixedQueries& queries, int batch, const AttentionHeads& heads, A* out,
                DecodeWorkspace workspace, cudaStream_t stream, int version, int keys_per_split,
                int split_unit) {
  kargs::require_at_least(op, "keys_per_split", keys_per_split, kDecodeSplitAuto);
  kargs::require_version(op, version, kAttentionDecodeVersions);
  const bool v02_ok =
      heads.head_dim % kVec16<T> == 0 && aligned16(k_cache) && aligned16(v_cache);
  if (version == 0) version = v02_ok ? 2 : 1;
  const int rows = queries.q_len * (heads.n_heads / heads.n_kv_heads);
  const int row_chunks = (rows + kMaxRowsPerBlock - 1) / kMaxRowsPerBlock;
  kargs::require(static_cast<std::int64_t>(heads.n_kv_heads) * row_chunks <= 65535, op,
                 "n_kv_heads * ceil(q_len * group / 8) must be <= 65535 (a grid y dimension)");
  if (batch == 0) return;
  const int max_context = kv.max_context();
  if (version == 1) {
    launch_attention_v01(op, q, k_cache, v_cache, kv, queries, batch, queries.q_len, max_context,
                         heads, out, stream);
    return;
  }

  kargs::require(v02_ok, op,
                 "version 2 loads 16-byte vectors: head_dim = " + std::to_string(heads.head_dim) +
                     " must be a multiple of " + std::to_string(kVec16<T>) +
                     " and K and V 16-byte aligned");
  int num_splits = 1;
  float* part_o = nullptr;
  float* part_ml = nullptr;
  if (workspace.data != nullptr && keys_per_split == kDecodeSplitAuto) {
    // The occupancy's choice, at most what the workspace holds.
    const std::size_t per_split = static_cast<std::size_t>(batch) * queries.q_len *
                                  heads.n_heads * (heads.head_dim + 2);
    const int fits = static_cast<int>(
        std::min<std::size_t>(workspace.floats / per_split, kDecodeMaxSplits));
    if (fits >= 2) {
      const DecodeSplit split =
          attention_decode_split(device_sm_count(workspace), batch, queries.q_len, heads,
                                 max_context, split_unit, fits);
      keys_per_split = split.keys_per_split;
    }
  }
  if (workspace.data != nullptr && keys_per_split != kDecodeSplitAuto) {
    kargs::require(keys_per_split % split_unit == 0, op,
                   "keys_per_split = " + std::to_string(keys_per_split) +
                       " must be a whole number of blocks of " + std::to_string(split_unit));
    num_splits = num_chunks(max_context, keys_per_split);
    const std::size_t need = decode_workspace_floats(op, batch, queries.q_len, heads.n_heads,
                                                     heads.head_dim, max_context, keys_per_split);
    kargs::require(workspace.floats >= need, op,
                   "workspace of " + std::to_string(workspace.floats) + " floats < " +
                       std::to_string(need) + " needed");
    part_o = workspace.data;  // (batch, q_len, n_heads, num_splits, head_dim)
    part_ml = workspace.data + static_cast<std::size_t>(batch) * queries.q_len * heads.n_heads *
                                   num_splits * heads.head_dim;  // (…, num_splits, 2)
  }
  const auto run = [&](auto max_rows) {
    launch_decode_v02<T, A, KV, decltype(max_rows)::value>(q, k_cache, v_cache, kv, queries, batch,
                                                        heads, out, num_splits, keys_per_split,
                                                        part_o, part_ml, stream);
  };
  if (rows == 1) {
    run(std::integral_constant<int, 1>{});
  } else if (rows == 2) {
    run(std::integral_constant<int, 2>{});
  } else if (rows <= 4) {
    run(std::integral_constant<int, 4>{});
  } else {
    run(std::integral_constant<int, kMaxRowsPerBlock>{});  // more rows: several chunks
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// dispatch: the two layouts

std::size_t attention_decode_workspace_floats(int batch, int n_heads, int head_dim,
                                              int max_seq_len, int keys_per_split) {
  return decode_workspace_floats("attention_decode_workspace_floats", batch, 1, n_heads, head_dim,
                                 max_seq_len, keys_per_split);
}

std::size_t paged_attention_decode_workspace_floats(int batch, int q_len, int n_heads, int head_dim,
                                                    int max_context, int keys_per_split) {
  return decode_workspace_floats("paged_attention_decode_workspace_floats", batch, q_len, n_heads,
                                 head_dim, max_context, keys_per_split);
}

template <typename T, typename A>
void launch_attention_decode(const nondeduced_t<A>* q, const T* k_cache, const T* v_cache,
                             const int* lens,
                             int batch, int max_seq_len, const AttentionHeads& heads,
                             nondeduced_t<A>* out,
                             DecodeWorkspace workspace, cudaStream_t stream, int version,
                             int keys_per_split) {
  constexpr const char* kOp = "launch_attention_decode";
  kargs::require_at_least(kOp, "batch", batch, 0);
  kargs::require_at_least(kOp, "max_seq_len", max_seq_len, 1);
  check_attention_heads(kOp, heads);
  kargs::require(batch <= 65535, kOp,
                 "batch = " + std::to_string(batch) + " must be <= 65535 (a grid z dimension)");
  run_decode(kOp, q, k_cache, v_cache, ContiguousKV{max_seq_len},
             FixedQueries{lens, 1, max_seq_len}, batch, heads, out, workspace, stream, version,
             keys_per_split, 1);
}

template <typename T, typename A>
void launch_paged_attention_decode(const nondeduced_t<A>* q, const PagedKVView<T>& kv,
                                   const DeviceBlockTables& tables, int q_len,
                                   const AttentionHeads& heads, nondeduced_t<A>* out,
                                   DecodeWorkspace workspace, cudaStream_t stream, int version,
                                   int keys_per_split) {
  constexpr const char* kOp = "launch_paged_attention_decode";
  check_paged_args(kOp, kv, tables, heads);
  kargs::require(
      q_len >= 1 && q_len <= kMaxQLen, kOp,
      "q_len = " + std::to_string(q_len) + " must be in [1, " + std::to_string(kMaxQLen) + "]");
  const PagedKV addressing = paged_addressing(kv, tables);
  run_decode(kOp, q, kv.k_cache, kv.v_cache, addressing,
             FixedQueries{tables.context_lens, q_len, addressing.max_context()}, tables.batch,
             heads, out, workspace, stream, version, keys_per_split, kv.block_size);
}

#define NANOSERVE_INSTANTIATE_DECODE(T, A)                                                   \
  template void launch_attention_decode<T, A>(const A*, const T*, const T*, const int*, int, int, \
                                              const AttentionHeads&, A*, DecodeWorkspace,        \
                                              cudaStream_t, int, int);                           \
  template void launch_paged_attention_decode<T, A>(                                             \
      const A*, const PagedKVView<T>&, const DeviceBlockTables&, int, const AttentionHeads&, A*, \
      DecodeWorkspace, cudaStream_t, int, int);
NANOSERVE_FOR_EACH_STORAGE_PAIR(NANOSERVE_INSTANTIATE_DECODE)
#undef NANOSERVE_INSTANTIATE_DECODE

}  // namespace nanoserve
