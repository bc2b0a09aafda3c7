// Decode attention over a contiguous KV cache: one new query per sequence, GQA, causal by
// construction (a sequence's cache holds only keys at or before its query).
//
// Versions:
//   v01  one block per (sequence, query head): scores for all keys in shared memory, block-wide
//        softmax, weighted sum of V (attention_naive.cuh). Simple, but each query head re-reads
//        its KV head, reads are 2-4 bytes per thread, and shared memory caps the context.
//   v02  one block per (sequence, KV head, chunk of keys). Three ideas over v01:
//        - GQA sharing: the block serves all query heads of the KV head's group, so each K/V
//          byte leaves DRAM once per step instead of n_heads / n_kv_heads times;
//        - streaming: 16-byte loads, a group of lanes per key row, an online softmax (running
//          max m and sum l per head, Milakov & Gimelshein 2018) — no score buffer, any length;
//        - split-K (flash-decoding, Dao et al. 2023): with a workspace, a long context is cut
//          into chunks handled by parallel blocks, and a small combine kernel rescales and sums
//          their partial results, so a few long sequences still fill the whole GPU.
//
// Lane layout of v02 for one key row (head_dim = 128, fp16: 16 vectors of 8 halves):
//
//     warp lanes  0 ..15  -> key j     lane s loads vector s (elements 8s .. 8s+7) of k_j, v_j
//     warp lanes 16 ..31  -> key j+1
//
// A lane owns kLaneElems = 8 elements of every row (fp32: two 4-float vectors, L apart), so
// L = lanes per key = next_pow2(head_dim / 8) and a warp takes 32 / L keys per step; the score
// is a dot product over the L lanes (log2 L xor-shuffles), and each lane keeps the softmax state
// and its 8 output elements for each head of the group in registers.
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

#include "kernels/attention.h"
#include "kernels/attention_naive.cuh"
#include "kernels/kernel_args.h"
#include "kernels/online_softmax.cuh"
#include "kernels/reduce.cuh"
#include "kernels/vec_load.cuh"

namespace nanoserve {
namespace {

constexpr int kDecodeWarps = 4;    // v02 warps per block
constexpr int kLaneElems = 8;      // v02: elements of a head row owned by one lane
constexpr int kDecodeUnroll = 2;   // v02: key steps whose loads are issued together
constexpr int kMaxGroupPerBlock = 8;  // v02: query heads one block serves (larger groups split)

// ---------------------------------------------------------------------------------------------
// v01

// q (batch, n_heads, head_dim), caches (batch, max_seq_len, n_kv_heads, head_dim), lens (batch),
// out (batch, n_heads, head_dim); grid (n_heads, batch), block (kNaiveAttentionBlock)
template <typename T>
__global__ void attention_decode_kernel_v01(const float* __restrict__ q,
                                            const T* __restrict__ k_cache,
                                            const T* __restrict__ v_cache,
                                            const int* __restrict__ lens, int max_seq_len,
                                            int n_heads, int n_kv_heads, int head_dim,
                                            float scale, float* __restrict__ out) {
  NS_DYNAMIC_SHARED(float, smem);
  const int h = blockIdx.x, b = blockIdx.y;
  const int g = h / (n_heads / n_kv_heads);
  const int n_keys = min(lens[b], max_seq_len);
  const std::int64_t kv_stride = static_cast<std::int64_t>(n_kv_heads) * head_dim;
  const std::int64_t seq_base = static_cast<std::int64_t>(b) * max_seq_len * kv_stride;
  const std::int64_t q_off = (static_cast<std::int64_t>(b) * n_heads + h) * head_dim;
  attend_one_query_naive(q + q_off, k_cache + seq_base + g * head_dim,
                         v_cache + seq_base + g * head_dim, kv_stride, n_keys, head_dim, scale,
                         out + q_off, smem);
}

// ---------------------------------------------------------------------------------------------
// v02

// q (batch, n_heads, head_dim), caches (batch, max_seq_len, n_kv_heads, head_dim), lens (batch),
// out (batch, n_heads, head_dim); with num_splits = gridDim.x > 1 the results go to
// part_o (batch, n_heads, num_splits, head_dim) and part_ml (batch, n_heads, num_splits, 2)
// instead. grid (num_splits, n_kv_heads * head_chunks, batch), block (kDecodeWarps * 32),
// dynamic smem kDecodeWarps * kMaxGroup * (head_dim + 2) floats.
template <typename T, int kMaxGroup>
__global__ void attention_decode_kernel_v02(const float* __restrict__ q,
                                            const T* __restrict__ k_cache,
                                            const T* __restrict__ v_cache,
                                            const int* __restrict__ lens, int max_seq_len,
                                            int n_heads, int n_kv_heads, int head_dim,
                                            int lanes_per_key, int keys_per_split, float scale,
                                            float* __restrict__ out, float* __restrict__ part_o,
                                            float* __restrict__ part_ml) {
  constexpr int kVec = kVec16<T>;                   // elements per 16-byte load
  constexpr int kVecsPerLane = kLaneElems / kVec;   // 1 (fp16/bf16) or 2 (fp32)
  NS_DYNAMIC_SHARED(float, smem);

  // Which sequence, KV head, query heads and keys this block owns.
  const int group = n_heads / n_kv_heads;
  const int head_chunks = (group + kMaxGroup - 1) / kMaxGroup;
  const int split = blockIdx.x, num_splits = gridDim.x, b = blockIdx.z;
  const int g = blockIdx.y / head_chunks;
  const int h0 = g * group + (blockIdx.y % head_chunks) * kMaxGroup;  // first query head
  const int n_h = min(kMaxGroup, g * group + group - h0);             // query heads served
  const int len = min(lens[b], max_seq_len);
  const int key_begin = split * keys_per_split;
  const int key_end = min(len, key_begin + keys_per_split);
  float* out_b = out + (static_cast<std::int64_t>(b) * n_heads + h0) * head_dim;  // (n_h, hd)
  if (key_begin >= key_end) {  // whole block: no keys (an empty sequence, or past its end)
    if (num_splits == 1) {
      for (int i = threadIdx.x; i < n_h * head_dim; i += blockDim.x) out_b[i] = 0.0f;
    }
    return;  // the combine kernel skips chunks past the end
  }

  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int L = lanes_per_key, sub = lane % L, slot = lane / L;
  const int n_vec = head_dim / kVec;
  const int keys_per_warp_step = 32 / L;
  const int keys_per_step = kDecodeWarps * keys_per_warp_step;
  const std::int64_t kv_stride = static_cast<std::int64_t>(n_kv_heads) * head_dim;
  const T* k_base = k_cache + static_cast<std::int64_t>(b) * max_seq_len * kv_stride +
                    static_cast<std::int64_t>(g) * head_dim;  // key j at k_base + j*kv_stride
  const T* v_base = v_cache + (k_base - k_cache);

  // This lane's slice of each query head, and its running softmax state per head.
  const float* q_b = q + (static_cast<std::int64_t>(b) * n_heads + h0) * head_dim;  // (n_h, hd)
  float q_r[kMaxGroup][kLaneElems];
  float acc[kMaxGroup][kLaneElems];
  float m[kMaxGroup], l[kMaxGroup];
  NS_UNROLL
  for (int hh = 0; hh < kMaxGroup; ++hh) {
    m[hh] = -INFINITY;
    l[hh] = 0.0f;
    NS_UNROLL
    for (int i = 0; i < kVecsPerLane; ++i) {
      const int vi = sub + i * L;
      NS_UNROLL
      for (int e = 0; e < kVec; ++e) {
        const bool ok = hh < n_h && vi < n_vec;  // heads past the group's end stay 0 (unused)
        q_r[hh][i * kVec + e] = ok ? q_b[hh * head_dim + vi * kVec + e] : 0.0f;
        acc[hh][i * kVec + e] = 0.0f;
      }
    }
  }

  // Stream this block's keys: each warp-step covers keys_per_warp_step keys, kDecodeUnroll
  // steps' loads are issued before any of them is used. The loop bound depends only on the
  // warp, so every lane reaches every shuffle.
  for (int base = key_begin + warp * keys_per_warp_step; base < key_end;
       base += kDecodeUnroll * keys_per_step) {
    uint4 k_raw[kDecodeUnroll][kVecsPerLane], v_raw[kDecodeUnroll][kVecsPerLane];
    bool valid[kDecodeUnroll];
    NS_UNROLL
    for (int u = 0; u < kDecodeUnroll; ++u) {
      const int j = base + u * keys_per_step + slot;
      valid[u] = j < key_end;
      NS_UNROLL
      for (int i = 0; i < kVecsPerLane; ++i) {
        const int vi = sub + i * L;
        if (valid[u] && vi < n_vec) {
          const std::int64_t off = j * kv_stride + vi * kVec;
          k_raw[u][i] = *reinterpret_cast<const uint4*>(k_base + off);
          v_raw[u][i] = *reinterpret_cast<const uint4*>(v_base + off);
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
      for (int hh = 0; hh < kMaxGroup; ++hh) {
        float dot = 0.0f;
        NS_UNROLL
        for (int k = 0; k < kLaneElems; ++k) dot += q_r[hh][k] * k_f[k];
        // Sum over the L lanes of this key (xor offsets below L stay inside the group).
        for (int offset = L / 2; offset > 0; offset /= 2) {
          dot += __shfl_xor_sync(kFullWarpMask, dot, offset);
        }
        if (valid[u]) {
          const float s = dot * scale;
          const float m_new = fmaxf(m[hh], s);
          const float corr = __expf(m[hh] - m_new);  // 0 on the first key (m = -inf)
          const float p = __expf(s - m_new);
          l[hh] = l[hh] * corr + p;
          NS_UNROLL
          for (int k = 0; k < kLaneElems; ++k) acc[hh][k] = acc[hh][k] * corr + p * v_f[k];
          m[hh] = m_new;
        }
      }
    }
  }

  // Merge the key slots of the warp (lanes `sub` apart by multiples of L hold the same
  // elements of different keys' partial sums).
  for (int offset = L; offset < 32; offset *= 2) {
    NS_UNROLL
    for (int hh = 0; hh < kMaxGroup; ++hh) {
      const float m_o = __shfl_xor_sync(kFullWarpMask, m[hh], offset);
      const float l_o = __shfl_xor_sync(kFullWarpMask, l[hh], offset);
      float a, c;
      merge_softmax_state(m[hh], l[hh], m_o, l_o, a, c);
      NS_UNROLL
      for (int k = 0; k < kLaneElems; ++k) {
        const float acc_o = __shfl_xor_sync(kFullWarpMask, acc[hh][k], offset);
        acc[hh][k] = acc[hh][k] * a + acc_o * c;
      }
    }
  }

  // Merge the warps through shared memory, then write this block's result.
  float* o_s = smem;                                         // (warps, kMaxGroup, head_dim)
  float* m_s = smem + kDecodeWarps * kMaxGroup * head_dim;   // (warps, kMaxGroup)
  float* l_s = m_s + kDecodeWarps * kMaxGroup;               // (warps, kMaxGroup)
  if (slot == 0) {
    NS_UNROLL
    for (int hh = 0; hh < kMaxGroup; ++hh) {
      NS_UNROLL
      for (int i = 0; i < kVecsPerLane; ++i) {
        const int vi = sub + i * L;
        if (vi < n_vec) {
          NS_UNROLL
          for (int e = 0; e < kVec; ++e) {
            o_s[(warp * kMaxGroup + hh) * head_dim + vi * kVec + e] = acc[hh][i * kVec + e];
          }
        }
      }
      if (lane == 0) {
        m_s[warp * kMaxGroup + hh] = m[hh];
        l_s[warp * kMaxGroup + hh] = l[hh];
      }
    }
  }
  __syncthreads();
  for (int idx = threadIdx.x; idx < n_h * head_dim; idx += blockDim.x) {
    const int hh = idx / head_dim, e = idx % head_dim;
    float m_all = -INFINITY;
    for (int w = 0; w < kDecodeWarps; ++w) m_all = fmaxf(m_all, m_s[w * kMaxGroup + hh]);
    float o = 0.0f, l_all = 0.0f;
    for (int w = 0; w < kDecodeWarps; ++w) {
      const float m_w = m_s[w * kMaxGroup + hh];
      const float f = m_w == -INFINITY ? 0.0f : __expf(m_w - m_all);
      o += o_s[(w * kMaxGroup + hh) * head_dim + e] * f;
      l_all += l_s[w * kMaxGroup + hh] * f;
    }
    if (num_splits == 1) {
      out_b[idx] = o / l_all;
    } else {
      const std::int64_t part = (static_cast<std::int64_t>(b) * n_heads + h0 + hh) * num_splits +
                                split;  // (batch, n_heads, num_splits) index
      part_o[part * head_dim + e] = o;
      if (e == 0) {
        part_ml[2 * part] = m_all;
        part_ml[2 * part + 1] = l_all;
      }
    }
  }
}

// Combines the split-K partials of v02: out = Σ_s o_s e^(m_s - M) / Σ_s l_s e^(m_s - M) over the
// chunks that hold keys (M = max_s m_s). part_o (batch, n_heads, num_splits, head_dim),
// part_ml (batch, n_heads, num_splits, 2), lens (batch), out (batch, n_heads, head_dim);
// grid (n_heads, batch), block (128)
__global__ void attention_decode_combine_kernel(const float* __restrict__ part_o,
                                                const float* __restrict__ part_ml,
                                                const int* __restrict__ lens, int max_seq_len,
                                                int n_heads, int head_dim, int num_splits,
                                                int keys_per_split, float* __restrict__ out) {
  const int h = blockIdx.x, b = blockIdx.y;
  const int len = min(lens[b], max_seq_len);
  const int active = len <= 0 ? 0 : (len + keys_per_split - 1) / keys_per_split;
  const std::int64_t row = static_cast<std::int64_t>(b) * n_heads + h;
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

// Whether v02 can load rows of this cache with 16-byte vectors.
template <typename T>
bool decode_v02_supported(const T* k_cache, const T* v_cache, int head_dim) {
  return head_dim % kVec16<T> == 0 && aligned16(k_cache) && aligned16(v_cache);
}

int decode_num_splits(int max_seq_len, int keys_per_split) {
  return (max_seq_len + keys_per_split - 1) / keys_per_split;
}

template <typename T, int kMaxGroup>
void launch_decode_v02(const float* q, const T* k_cache, const T* v_cache, const int* lens,
                       int batch, int max_seq_len, const AttentionHeads& heads, float* out,
                       int num_splits, int keys_per_split, float* part_o, float* part_ml,
                       cudaStream_t stream) {
  const int group = heads.n_heads / heads.n_kv_heads;
  const int head_chunks = (group + kMaxGroup - 1) / kMaxGroup;
  const int lanes_per_key = next_pow2((heads.head_dim + kLaneElems - 1) / kLaneElems);
  const std::size_t smem =
      static_cast<std::size_t>(kDecodeWarps) * kMaxGroup * (heads.head_dim + 2) * sizeof(float);
  const float scale = 1.0f / std::sqrt(static_cast<float>(heads.head_dim));
  launch(attention_decode_kernel_v02<T, kMaxGroup>,
         dim3(num_splits, heads.n_kv_heads * head_chunks, batch), dim3(kDecodeWarps * 32), smem,
         stream, q, k_cache, v_cache, lens, max_seq_len, heads.n_heads, heads.n_kv_heads,
         heads.head_dim, lanes_per_key, num_splits == 1 ? max_seq_len : keys_per_split, scale,
         out, part_o, part_ml);
  if (num_splits > 1) {
    launch(attention_decode_combine_kernel, dim3(heads.n_heads, batch), dim3(128), 0, stream,
           part_o, part_ml, lens, max_seq_len, heads.n_heads, heads.head_dim, num_splits,
           keys_per_split, out);
  }
}

}  // namespace

std::size_t attention_decode_workspace_floats(int batch, int n_heads, int head_dim,
                                              int max_seq_len, int keys_per_split) {
  constexpr const char* kOp = "attention_decode_workspace_floats";
  kargs::require_at_least(kOp, "batch", batch, 0);
  kargs::require_at_least(kOp, "n_heads", n_heads, 0);
  kargs::require_at_least(kOp, "head_dim", head_dim, 0);
  kargs::require_at_least(kOp, "max_seq_len", max_seq_len, 0);
  kargs::require_at_least(kOp, "keys_per_split", keys_per_split, 1);
  const int splits = decode_num_splits(max_seq_len, keys_per_split);
  if (splits <= 1) return 0;
  return static_cast<std::size_t>(batch) * n_heads * splits * (head_dim + 2);
}

template <typename T>
void launch_attention_decode(const float* q, const T* k_cache, const T* v_cache, const int* lens,
                             int batch, int max_seq_len, const AttentionHeads& heads, float* out,
                             DecodeWorkspace workspace, cudaStream_t stream, int version,
                             int keys_per_split) {
  constexpr const char* kOp = "launch_attention_decode";
  kargs::require_at_least(kOp, "batch", batch, 0);
  kargs::require_at_least(kOp, "max_seq_len", max_seq_len, 1);
  kargs::require_gqa_heads(kOp, heads.n_heads, heads.n_kv_heads);
  kargs::require(heads.head_dim >= 1 && heads.head_dim <= kAttentionMaxHeadDim, kOp,
                 "head_dim = " + std::to_string(heads.head_dim) + " must be in [1, " +
                     std::to_string(kAttentionMaxHeadDim) + "]");
  kargs::require_at_least(kOp, "keys_per_split", keys_per_split, 1);
  kargs::require(batch <= 65535, kOp,
                 "batch = " + std::to_string(batch) + " must be <= 65535 (a grid y/z dimension)");
  kargs::require_version(kOp, version, kAttentionDecodeVersions);
  const bool v02_ok = decode_v02_supported(k_cache, v_cache, heads.head_dim);
  if (version == 0) version = v02_ok ? 2 : 1;
  if (batch == 0) return;

  if (version == 1) {
    const std::size_t smem = naive_attention_smem_bytes(heads.head_dim, max_seq_len);
    kargs::require(smem <= 48 * 1024, kOp,
                   "version 1 keeps all " + std::to_string(max_seq_len) +
                       " scores in shared memory (" + std::to_string(smem) +
                       " bytes > 48 KiB); use version 2");
    const float scale = 1.0f / std::sqrt(static_cast<float>(heads.head_dim));
    launch(attention_decode_kernel_v01<T>, dim3(heads.n_heads, batch), dim3(kNaiveAttentionBlock),
           smem, stream, q, k_cache, v_cache, lens, max_seq_len, heads.n_heads, heads.n_kv_heads,
           heads.head_dim, scale, out);
    return;
  }

  kargs::require(v02_ok, kOp,
                 "version 2 loads 16-byte vectors: head_dim = " + std::to_string(heads.head_dim) +
                     " must be a multiple of " + std::to_string(kVec16<T>) +
                     " and the caches 16-byte aligned");
  int num_splits = 1;
  float* part_o = nullptr;
  float* part_ml = nullptr;
  if (workspace.data != nullptr) {
    num_splits = decode_num_splits(max_seq_len, keys_per_split);
    const std::size_t need = attention_decode_workspace_floats(batch, heads.n_heads,
                                                               heads.head_dim, max_seq_len,
                                                               keys_per_split);
    kargs::require(workspace.floats >= need, kOp,
                   "workspace of " + std::to_string(workspace.floats) + " floats < " +
                       std::to_string(need) + " needed");
    part_o = workspace.data;  // (batch, n_heads, num_splits, head_dim)
    part_ml = workspace.data + static_cast<std::size_t>(batch) * heads.n_heads * num_splits *
                                   heads.head_dim;  // (batch, n_heads, num_splits, 2)
  }
  const int group = heads.n_heads / heads.n_kv_heads;
  const auto run = [&](auto max_group) {
    launch_decode_v02<T, decltype(max_group)::value>(q, k_cache, v_cache, lens, batch,
                                                     max_seq_len, heads, out, num_splits,
                                                     keys_per_split, part_o, part_ml, stream);
  };
  if (group == 1) {
    run(std::integral_constant<int, 1>{});
  } else if (group == 2) {
    run(std::integral_constant<int, 2>{});
  } else if (group <= 4) {
    run(std::integral_constant<int, 4>{});
  } else {
    run(std::integral_constant<int, kMaxGroupPerBlock>{});  // larger groups: several blocks
  }
}

template void launch_attention_decode<float>(const float*, const float*, const float*,
                                             const int*, int, int, const AttentionHeads&, float*,
                                             DecodeWorkspace, cudaStream_t, int, int);
template void launch_attention_decode<__half>(const float*, const __half*, const __half*,
                                              const int*, int, int, const AttentionHeads&,
                                              float*, DecodeWorkspace, cudaStream_t, int, int);
template void launch_attention_decode<__nv_bfloat16>(const float*, const __nv_bfloat16*,
                                                     const __nv_bfloat16*, const int*, int, int,
                                                     const AttentionHeads&, float*,
                                                     DecodeWorkspace, cudaStream_t, int, int);

}  // namespace nanoserve
