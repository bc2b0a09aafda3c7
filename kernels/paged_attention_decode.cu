// Paged decode attention: q_len (>= 1) new queries per sequence, keys and values gathered from
// a pool of KV blocks through per-sequence block tables (kernels/paged_attention.h has the
// layout). The paged twin of attention_decode.cu: the arithmetic is the same, only the address
// of key j changes, from `seq_base + j * kv_stride` to
//
//     slot(j) = block_tables[b][j / block_size] * block_size + j % block_size
//
// Versions:
//   v01  one block per (sequence, query, query head): a warp takes a whole KV block at a time
//        (one table lookup per block) and writes its keys' scores to shared memory; then a
//        block-wide softmax and the weighted sum of V, gathered block by block again. Reads each
//        KV head once per query head, 2-4 bytes per thread, and shared memory caps the context.
//   v02  one block per (sequence, KV head, <= 8 (query, head) rows, partition of the context),
//        the streaming kernel of contiguous decode v02 (see its header for the lane layout):
//        16-byte loads, a lane group per key, an online softmax (running m, l per row), every
//        K/V byte read once for all the rows — the GQA group's heads and, for speculative
//        verification, all q_len query positions, each masked causally at its own position;
//        with a workspace, partitions of keys_per_split keys (whole KV blocks) run in parallel
//        blocks and a combine kernel merges their (m, l, O) exactly (flash-decoding).
//        The table lookup costs one L1-cached load per key plus a multiply-high for
//        j / block_size (FastDivmod): next to the 2 x 256 bytes of K and V a key row carries
//        at head_dim 128 in fp16, the paging overhead is a few percent of the instructions.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

#include "kernels/attention_naive.cuh"
#include "kernels/kernel_args.h"
#include "kernels/online_softmax.cuh"
#include "kernels/paged_attention.h"
#include "kernels/paged_kv.cuh"
#include "kernels/reduce.cuh"
#include "kernels/vec_load.cuh"

namespace nanoserve {
namespace {

constexpr int kDecodeWarps = 4;      // v02 warps per block
constexpr int kLaneElems = 8;        // v02: elements of a head row owned by one lane
constexpr int kDecodeUnroll = 2;     // v02: key steps whose loads are issued together
constexpr int kMaxRowsPerBlock = 8;  // v02: (query, head) rows one block serves at most
constexpr int kMaxQLen = 64;         // queries per sequence (speculative γ + 1 is ~2-9)

// Context length of sequence b, clamped to what its table row can address.
__device__ __forceinline__ int clamped_context(const int* context_lens, int b, int max_context) {
  return min(max(context_lens[b], 0), max_context);
}

// ---------------------------------------------------------------------------------------------
// v01

// q (batch, q_len, n_heads, head_dim), pools (num_blocks, block_size, n_kv_heads, head_dim),
// block_tables (batch, max_blocks), context_lens (batch), out (batch, q_len, n_heads, head_dim);
// grid (n_heads, q_len, batch), block (kNaiveAttentionBlock), dynamic smem
// (head_dim + max_blocks * block_size) floats.
template <typename T>
__global__ void paged_attention_decode_kernel_v01(
    const float* __restrict__ q, const T* __restrict__ k_cache, const T* __restrict__ v_cache,
    const int* __restrict__ block_tables, const int* __restrict__ context_lens, int num_blocks,
    int block_size, int max_blocks, int n_heads, int n_kv_heads, int head_dim, float scale,
    float* __restrict__ out) {
  NS_DYNAMIC_SHARED(float, smem);
  __shared__ float scratch[32];
  const int h = blockIdx.x, i = blockIdx.y, q_len = gridDim.y, b = blockIdx.z;
  const int g = h / (n_heads / n_kv_heads);
  const int ctx = clamped_context(context_lens, b, max_blocks * block_size);
  const int n_keys = max(ctx - q_len + i + 1, 0);  // keys 0 .. position of query i
  const std::int64_t q_off = ((static_cast<std::int64_t>(b) * q_len + i) * n_heads + h) * head_dim;
  float* out_row = out + q_off;  // (head_dim)
  // n_keys is uniform across the block: the early return is whole-block.
  if (n_keys == 0) {
    for (int e = threadIdx.x; e < head_dim; e += blockDim.x) out_row[e] = 0.0f;
    return;
  }
  const int* table = block_tables + static_cast<std::int64_t>(b) * max_blocks;  // (max_blocks)
  const std::int64_t kv_stride = static_cast<std::int64_t>(n_kv_heads) * head_dim;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, n_warps = blockDim.x / 32;
  const int n_logical = (n_keys + block_size - 1) / block_size;
  float* q_s = smem;                // (head_dim)
  float* scores = smem + head_dim;  // (n_keys) scores, then unnormalised probabilities
  for (int e = threadIdx.x; e < head_dim; e += blockDim.x) q_s[e] = q[q_off + e];
  __syncthreads();

  // 1. scores: warp w gathers logical blocks w, w + n_warps, …; lanes across head_dim.
  for (int lb = warp; lb < n_logical; lb += n_warps) {
    const int block = table[lb];
    const bool ok = block >= 0 && block < num_blocks;  // else: NaN (see paged_attention.h)
    const T* k_block = k_cache +
                       static_cast<std::int64_t>(ok ? block : 0) * block_size * kv_stride +
                       g * head_dim;  // (block_size, kv_stride)
    const int keys = min(block_size, n_keys - lb * block_size);
    for (int o = 0; o < keys; ++o) {
      float dot = 0.0f;
      if (ok) {
        const T* k_row = k_block + o * kv_stride;  // (head_dim)
        for (int e = lane; e < head_dim; e += 32) dot += q_s[e] * to_float(k_row[e]);
      }
      dot = warp_sum(dot);
      if (lane == 0) scores[lb * block_size + o] = ok ? dot * scale : NAN;
    }
  }
  __syncthreads();

  // 2. softmax numerators exp(s - max) and their sum.
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

  // 3. out = Σ_j p_j v_j / sum: a thread per output value, V gathered block by block.
  for (int e = threadIdx.x; e < head_dim; e += blockDim.x) {
    float acc = 0.0f;
    for (int lb = 0; lb < n_logical; ++lb) {
      const int block = table[lb];
      const int keys = min(block_size, n_keys - lb * block_size);
      if (block < 0 || block >= num_blocks) {
        acc = NAN;
        continue;
      }
      const T* v_block =
          v_cache + static_cast<std::int64_t>(block) * block_size * kv_stride + g * head_dim + e;
      const float* p = scores + lb * block_size;  // (keys)
      for (int o = 0; o < keys; ++o) acc += p[o] * to_float(v_block[o * kv_stride]);
    }
    out_row[e] = acc / sum;
  }
}

// ---------------------------------------------------------------------------------------------
// v02

// q (batch, q_len, n_heads, head_dim), pools (num_blocks, block_size, n_kv_heads, head_dim),
// block_tables (batch, max_blocks), context_lens (batch), out (batch, q_len, n_heads, head_dim);
// with num_splits = gridDim.x > 1 the results go to part_o (batch, q_len, n_heads, num_splits,
// head_dim) and part_ml (batch, q_len, n_heads, num_splits, 2) instead.
// The rows of a (sequence, KV head) are r = i * group + hh (query i, head g * group + hh),
// cut into chunks of kMaxRows. grid (num_splits, n_kv_heads * row_chunks, batch),
// block (kDecodeWarps * 32), dynamic smem kDecodeWarps * kMaxRows * (head_dim + 2) floats.
template <typename T, int kMaxRows>
__global__ void paged_attention_decode_kernel_v02(
    const float* __restrict__ q, const T* __restrict__ k_cache, const T* __restrict__ v_cache,
    const int* __restrict__ block_tables, const int* __restrict__ context_lens, int num_blocks,
    FastDivmod block_size, int max_blocks, int q_len, int n_heads, int n_kv_heads, int head_dim,
    int lanes_per_key, int keys_per_split, float scale, float* __restrict__ out,
    float* __restrict__ part_o, float* __restrict__ part_ml) {
  constexpr int kVec = kVec16<T>;                  // elements per 16-byte load
  constexpr int kVecsPerLane = kLaneElems / kVec;  // 1 (fp16/bf16) or 2 (fp32)
  NS_DYNAMIC_SHARED(float, smem);

  // Which sequence, KV head, rows and keys this block owns.
  const int group = n_heads / n_kv_heads;
  const int rows_total = q_len * group;
  const int row_chunks = (rows_total + kMaxRows - 1) / kMaxRows;
  const int split = blockIdx.x, num_splits = gridDim.x, b = blockIdx.z;
  const int g = blockIdx.y / row_chunks;
  const int r0 = (blockIdx.y % row_chunks) * kMaxRows;  // first row
  const int n_r = min(kMaxRows, rows_total - r0);       // rows served
  const int ctx = clamped_context(context_lens, b, max_blocks * block_size.divisor);
  const int first_pos = ctx - q_len;                        // position of query 0
  const int last_pos = first_pos + (r0 + n_r - 1) / group;  // of this block's last row
  const int key_begin = split * keys_per_split;
  const int key_end = min(min(ctx, last_pos + 1), key_begin + keys_per_split);
  // Output row rr of this block: (batch, q_len, n_heads) index of (b, query, head).
  const auto out_index = [&](int rr) {
    const int r = r0 + rr;
    return (static_cast<std::int64_t>(b) * q_len + r / group) * n_heads + g * group + r % group;
  };
  if (key_begin >= key_end) {  // whole block: no visible key (or a partition past the end)
    if (num_splits == 1) {
      for (int idx = threadIdx.x; idx < n_r * head_dim; idx += blockDim.x) {
        out[out_index(idx / head_dim) * head_dim + idx % head_dim] = 0.0f;
      }
    }
    return;  // the combine kernel skips partitions past a row's position
  }

  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int L = lanes_per_key, sub = lane % L, slot = lane / L;
  const int n_vec = head_dim / kVec;
  const int keys_per_warp_step = 32 / L;
  const int keys_per_step = kDecodeWarps * keys_per_warp_step;
  const std::int64_t kv_stride = static_cast<std::int64_t>(n_kv_heads) * head_dim;
  const std::int64_t head_off = static_cast<std::int64_t>(g) * head_dim;
  const int* table = block_tables + static_cast<std::int64_t>(b) * max_blocks;  // (max_blocks)

  // This lane's slice of each row's query, the row's position and running softmax state.
  int pos[kMaxRows];
  float q_r[kMaxRows][kLaneElems], acc[kMaxRows][kLaneElems], m[kMaxRows], l[kMaxRows];
  NS_UNROLL
  for (int rr = 0; rr < kMaxRows; ++rr) {
    const bool row_ok = rr < n_r;  // rows past the chunk: no visible key, query 0
    pos[rr] = row_ok ? first_pos + (r0 + rr) / group : -1;
    m[rr] = -INFINITY;
    l[rr] = 0.0f;
    const float* q_row = q + (row_ok ? out_index(rr) : 0) * head_dim;  // (head_dim)
    NS_UNROLL
    for (int i = 0; i < kVecsPerLane; ++i) {
      const int vi = sub + i * L;
      NS_UNROLL
      for (int e = 0; e < kVec; ++e) {
        q_r[rr][i * kVec + e] = row_ok && vi < n_vec ? q_row[vi * kVec + e] : 0.0f;
        acc[rr][i * kVec + e] = 0.0f;
      }
    }
  }

  // Stream the keys as contiguous v02 does; only the row address goes through the table.
  for (int base = key_begin + warp * keys_per_warp_step; base < key_end;
       base += kDecodeUnroll * keys_per_step) {
    uint4 k_raw[kDecodeUnroll][kVecsPerLane], v_raw[kDecodeUnroll][kVecsPerLane];
    int key[kDecodeUnroll];
    NS_UNROLL
    for (int u = 0; u < kDecodeUnroll; ++u) {
      key[u] = base + u * keys_per_step + slot;
      const bool valid = key[u] < key_end;
      const std::int64_t row = valid ? paged_slot(table, block_size, num_blocks, key[u]) : -1;
      NS_UNROLL
      for (int i = 0; i < kVecsPerLane; ++i) {
        const int vi = sub + i * L;
        if (valid && vi < n_vec && row >= 0) {
          const std::int64_t off = row * kv_stride + head_off + vi * kVec;
          k_raw[u][i] = *reinterpret_cast<const uint4*>(k_cache + off);
          v_raw[u][i] = *reinterpret_cast<const uint4*>(v_cache + off);
        } else if (valid && vi < n_vec) {  // a bad block id: NaN, never memory outside the pool
          k_raw[u][i] = nan_vector();
          v_raw[u][i] = nan_vector();
        } else {
          k_raw[u][i] = make_uint4(0, 0, 0, 0);
          v_raw[u][i] = make_uint4(0, 0, 0, 0);
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
        for (int offset = L / 2; offset > 0; offset /= 2) {
          dot += __shfl_xor_sync(kFullWarpMask, dot, offset);
        }
        if (key[u] < key_end && key[u] <= pos[rr]) {  // causal among the q_len queries
          const float s = dot * scale;
          const float m_new = fmaxf(m[rr], s);
          const float corr = __expf(m[rr] - m_new);  // 0 on the first key (m = -inf)
          const float p = __expf(s - m_new);
          l[rr] = l[rr] * corr + p;
          NS_UNROLL
          for (int k = 0; k < kLaneElems; ++k) acc[rr][k] = acc[rr][k] * corr + p * v_f[k];
          m[rr] = m_new;
        }
      }
    }
  }

  // Merge the key slots of the warp, then the warps through shared memory.
  for (int offset = L; offset < 32; offset *= 2) {
    NS_UNROLL
    for (int rr = 0; rr < kMaxRows; ++rr) {
      const float m_o = __shfl_xor_sync(kFullWarpMask, m[rr], offset);
      const float l_o = __shfl_xor_sync(kFullWarpMask, l[rr], offset);
      float a, c;
      merge_softmax_state(m[rr], l[rr], m_o, l_o, a, c);
      NS_UNROLL
      for (int k = 0; k < kLaneElems; ++k) {
        const float acc_o = __shfl_xor_sync(kFullWarpMask, acc[rr][k], offset);
        acc[rr][k] = acc[rr][k] * a + acc_o * c;
      }
    }
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
    float m_all = -INFINITY;
    for (int w = 0; w < kDecodeWarps; ++w) m_all = fmaxf(m_all, m_s[w * kMaxRows + rr]);
    float o = 0.0f, l_all = 0.0f;
    for (int w = 0; w < kDecodeWarps; ++w) {
      const float m_w = m_s[w * kMaxRows + rr];
      const float f = m_w == -INFINITY ? 0.0f : __expf(m_w - m_all);
      o += o_s[(w * kMaxRows + rr) * head_dim + e] * f;
      l_all += l_s[w * kMaxRows + rr] * f;
    }
    const std::int64_t row = out_index(rr);
    if (num_splits == 1) {
      out[row * head_dim + e] = l_all == 0.0f ? 0.0f : o / l_all;  // 0: position < 0
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

// Merges v02's partitions: for row (b, i, h) the partitions s with s * keys_per_split <= its
// position hold its keys (online_softmax.cuh). part_o (batch, q_len, n_heads, num_splits,
// head_dim), part_ml (batch, q_len, n_heads, num_splits, 2), context_lens (batch),
// out (batch, q_len, n_heads, head_dim); grid (q_len * n_heads, batch), block (128)
__global__ void paged_attention_decode_combine_kernel(const float* __restrict__ part_o,
                                                      const float* __restrict__ part_ml,
                                                      const int* __restrict__ context_lens,
                                                      int max_context, int q_len, int n_heads,
                                                      int head_dim, int num_splits,
                                                      int keys_per_split, float* __restrict__ out) {
  const int b = blockIdx.y, i = blockIdx.x / n_heads;
  const int pos = clamped_context(context_lens, b, max_context) - q_len + i;
  const int active = pos < 0 ? 0 : pos / keys_per_split + 1;
  const std::int64_t row = static_cast<std::int64_t>(b) * q_len * n_heads + blockIdx.x;
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

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

// Whether v02 can load rows of these pools with 16-byte vectors.
template <typename T>
bool decode_v02_supported(const PagedKVView<T>& kv, int head_dim) {
  return head_dim % kVec16<T> == 0 && aligned16(kv.k_cache) && aligned16(kv.v_cache);
}

int num_partitions(int max_context, int keys_per_split) {
  return (max_context + keys_per_split - 1) / keys_per_split;
}

template <typename T, int kMaxRows>
void launch_decode_v02(const float* q, const PagedKVView<T>& kv, const DeviceBlockTables& tables,
                       int q_len, const AttentionHeads& heads, float* out, int num_splits,
                       int keys_per_split, float* part_o, float* part_ml, cudaStream_t stream) {
  const int group = heads.n_heads / heads.n_kv_heads;
  const int row_chunks = (q_len * group + kMaxRows - 1) / kMaxRows;
  const int max_context = tables.max_blocks_per_seq * kv.block_size;
  const int lanes_per_key = next_pow2((heads.head_dim + kLaneElems - 1) / kLaneElems);
  const std::size_t smem =
      static_cast<std::size_t>(kDecodeWarps) * kMaxRows * (heads.head_dim + 2) * sizeof(float);
  const float scale = 1.0f / std::sqrt(static_cast<float>(heads.head_dim));
  launch(paged_attention_decode_kernel_v02<T, kMaxRows>,
         dim3(num_splits, heads.n_kv_heads * row_chunks, tables.batch), dim3(kDecodeWarps * 32),
         smem, stream, q, kv.k_cache, kv.v_cache, tables.block_tables, tables.context_lens,
         kv.num_blocks, FastDivmod(kv.block_size), tables.max_blocks_per_seq, q_len, heads.n_heads,
         heads.n_kv_heads, heads.head_dim, lanes_per_key,
         num_splits == 1 ? max_context : keys_per_split, scale, out, part_o, part_ml);
  if (num_splits > 1) {
    launch(paged_attention_decode_combine_kernel, dim3(q_len * heads.n_heads, tables.batch),
           dim3(128), 0, stream, part_o, part_ml, tables.context_lens, max_context, q_len,
           heads.n_heads, heads.head_dim, num_splits, keys_per_split, out);
  }
}

}  // namespace

std::size_t paged_attention_decode_workspace_floats(int batch, int q_len, int n_heads, int head_dim,
                                                    int max_context, int keys_per_split) {
  constexpr const char* kOp = "paged_attention_decode_workspace_floats";
  kargs::require_at_least(kOp, "batch", batch, 0);
  kargs::require_at_least(kOp, "q_len", q_len, 0);
  kargs::require_at_least(kOp, "n_heads", n_heads, 0);
  kargs::require_at_least(kOp, "head_dim", head_dim, 0);
  kargs::require_at_least(kOp, "max_context", max_context, 0);
  kargs::require_at_least(kOp, "keys_per_split", keys_per_split, 1);
  const int splits = num_partitions(max_context, keys_per_split);
  if (splits <= 1) return 0;
  return static_cast<std::size_t>(batch) * q_len * n_heads * splits * (head_dim + 2);
}

template <typename T>
void launch_paged_attention_decode(const float* q, const PagedKVView<T>& kv,
                                   const DeviceBlockTables& tables, int q_len,
                                   const AttentionHeads& heads, float* out,
                                   DecodeWorkspace workspace, cudaStream_t stream, int version,
                                   int keys_per_split) {
  constexpr const char* kOp = "launch_paged_attention_decode";
  check_paged_args(kOp, kv, tables, heads);
  kargs::require(
      q_len >= 1 && q_len <= kMaxQLen, kOp,
      "q_len = " + std::to_string(q_len) + " must be in [1, " + std::to_string(kMaxQLen) + "]");
  kargs::require_at_least(kOp, "keys_per_split", keys_per_split, 1);
  kargs::require_version(kOp, version, kPagedDecodeVersions);
  const bool v02_ok = decode_v02_supported(kv, heads.head_dim);
  if (version == 0) version = v02_ok ? 2 : 1;
  const int max_context = tables.max_blocks_per_seq * kv.block_size;
  const int group = heads.n_heads / heads.n_kv_heads;
  const int row_chunks = (q_len * group + kMaxRowsPerBlock - 1) / kMaxRowsPerBlock;
  kargs::require(static_cast<std::int64_t>(heads.n_kv_heads) * row_chunks <= 65535, kOp,
                 "n_kv_heads * ceil(q_len * group / 8) must be <= 65535 (a grid y dimension)");
  if (tables.batch == 0) return;

  if (version == 1) {
    const std::size_t smem = naive_attention_smem_bytes(heads.head_dim, max_context);
    kargs::require(smem <= 48 * 1024, kOp,
                   "version 1 keeps all " + std::to_string(max_context) +
                       " scores in shared memory (" + std::to_string(smem) +
                       " bytes > 48 KiB); use version 2");
    const float scale = 1.0f / std::sqrt(static_cast<float>(heads.head_dim));
    launch(paged_attention_decode_kernel_v01<T>, dim3(heads.n_heads, q_len, tables.batch),
           dim3(kNaiveAttentionBlock), smem, stream, q, kv.k_cache, kv.v_cache, tables.block_tables,
           tables.context_lens, kv.num_blocks, kv.block_size, tables.max_blocks_per_seq,
           heads.n_heads, heads.n_kv_heads, heads.head_dim, scale, out);
    return;
  }

  kargs::require(v02_ok, kOp,
                 "version 2 loads 16-byte vectors: head_dim = " + std::to_string(heads.head_dim) +
                     " must be a multiple of " + std::to_string(kVec16<T>) +
                     " and the pools 16-byte aligned");
  int num_splits = 1;
  float* part_o = nullptr;
  float* part_ml = nullptr;
  if (workspace.data != nullptr) {
    kargs::require(keys_per_split % kv.block_size == 0, kOp,
                   "keys_per_split = " + std::to_string(keys_per_split) +
                       " must be a whole number of blocks of " + std::to_string(kv.block_size));
    num_splits = num_partitions(max_context, keys_per_split);
    const std::size_t need = paged_attention_decode_workspace_floats(
        tables.batch, q_len, heads.n_heads, heads.head_dim, max_context, keys_per_split);
    kargs::require(workspace.floats >= need, kOp,
                   "workspace of " + std::to_string(workspace.floats) + " floats < " +
                       std::to_string(need) + " needed");
    const std::size_t rows = static_cast<std::size_t>(tables.batch) * q_len * heads.n_heads;
    part_o = workspace.data;  // (batch, q_len, n_heads, num_splits, head_dim)
    part_ml = workspace.data + rows * num_splits * heads.head_dim;  // (…, num_splits, 2)
  }
  const auto run = [&](auto max_rows) {
    launch_decode_v02<T, decltype(max_rows)::value>(q, kv, tables, q_len, heads, out, num_splits,
                                                    keys_per_split, part_o, part_ml, stream);
  };
  const int rows = q_len * group;
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

#define NANOSERVE_INSTANTIATE_PAGED_DECODE(T)                                                     \
  template void launch_paged_attention_decode<T>(                                                 \
      const float*, const PagedKVView<T>&, const DeviceBlockTables&, int, const AttentionHeads&, \
      float*, DecodeWorkspace, cudaStream_t, int, int);
NANOSERVE_INSTANTIATE_PAGED_DECODE(float)
NANOSERVE_INSTANTIATE_PAGED_DECODE(__half)
NANOSERVE_INSTANTIATE_PAGED_DECODE(__nv_bfloat16)
#undef NANOSERVE_INSTANTIATE_PAGED_DECODE

}  // namespace nanoserve
