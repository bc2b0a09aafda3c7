#pragma once
/// \file
/// \brief The online-softmax algebra of the streaming attention kernels (decode v02, both KV
/// layouts): adding one key to a running state, merging two partial states (across lanes and
/// across warps), and the split-K ("flash-decoding") combine of per-chunk partial results.
///
/// A partial result over a set of keys S is the triple
///
///     m = max_{j in S} s_j      l = Σ_{j in S} e^(s_j - m)      o = Σ_{j in S} e^(s_j - m) v_j
///
/// and two of them (m1, l1, o1), (m2, l2, o2) over disjoint key sets merge exactly into
///
///     m = max(m1, m2)     l = l1 e^(m1 - m) + l2 e^(m2 - m)     o = o1 e^(m1 - m) + o2 e^(m2 - m)
///
/// with softmax(s) · V = o / l at the end (Milakov & Gimelshein 2018; Dao et al.,
/// "Flash-Decoding for long-context inference", 2023). A state that has seen no key has
/// m = -inf, l = 0, o = 0; the factors below are 0 for it, never e^(-inf - -inf) = NaN.

#include <cmath>
#include <cstdint>

#include "kernels/cuda_compat.h"
#include "kernels/reduce.cuh"

namespace nanoserve {

/// \brief Merges state (m_o, l_o) into (m, l); returns in `a` and `b` the factors that scale
/// the accumulator of (m, l) and of (m_o, l_o) respectively, so that `o = o * a + o_o * b`.
/// A side with m = -inf (no keys) gets factor 0.
__device__ __forceinline__ void merge_softmax_state(float& m, float& l, float m_o, float l_o,
                                                    float& a, float& b) {
  const float m_new = fmaxf(m, m_o);
  a = m == -INFINITY ? 0.0f : __expf(m - m_new);
  b = m_o == -INFINITY ? 0.0f : __expf(m_o - m_new);
  l = l * a + l_o * b;
  m = m_new;
}

/// \brief Adds key `s` (its scaled score) with value slice `v` to the running state (m, l,
/// acc): `m' = max(m, s)`, `l' = l e^(m - m') + e^(s - m')`,
/// `acc' = acc e^(m - m') + e^(s - m') v`.
/// The first key (m = -inf) gets a correction factor e^(-inf) = 0.
template <int kN>
__device__ __forceinline__ void online_softmax_add(float& m, float& l, float (&acc)[kN], float s,
                                                   const float (&v)[kN]) {
  const float m_new = fmaxf(m, s);
  const float corr = __expf(m - m_new);
  const float p = __expf(s - m_new);
  l = l * corr + p;
  NS_UNROLL
  for (int k = 0; k < kN; ++k) acc[k] = acc[k] * corr + p * v[k];
  m = m_new;
}

/// \brief Merges into this lane's state (m, l, acc) the state of the lane `offset` away (xor):
/// afterwards both hold the merge of the two. Every lane of the warp must call it.
template <int kN>
__device__ __forceinline__ void merge_softmax_lanes(float& m, float& l, float (&acc)[kN],
                                                    int offset) {
  const float m_o = __shfl_xor_sync(kFullWarpMask, m, offset);
  const float l_o = __shfl_xor_sync(kFullWarpMask, l, offset);
  float a, b;
  merge_softmax_state(m, l, m_o, l_o, a, b);
  NS_UNROLL
  for (int k = 0; k < kN; ++k) {
    const float acc_o = __shfl_xor_sync(kFullWarpMask, acc[k], offset);
    acc[k] = acc[k] * a + acc_o * b;
  }
}

/// \brief Merges `n` partial states of one output element, strided in shared memory: state
/// w is `(m[w * stride], l[w * stride], o[w * o_stride])`. Returns the unnormalised output and
/// sets `m_all`, `l_all`; states with m = -inf (no keys) count for nothing.
__device__ __forceinline__ float merge_softmax_partials(const float* m, const float* l,
                                                        const float* o, int n, int stride,
                                                        int o_stride, float& m_all,
                                                        float& l_all) {
  m_all = -INFINITY;
  for (int w = 0; w < n; ++w) m_all = fmaxf(m_all, m[w * stride]);
  float acc = 0.0f;
  l_all = 0.0f;
  for (int w = 0; w < n; ++w) {
    const float m_w = m[w * stride];
    const float f = m_w == -INFINITY ? 0.0f : __expf(m_w - m_all);
    acc += o[static_cast<std::int64_t>(w) * o_stride] * f;
    l_all += l[w * stride] * f;
  }
  return acc;
}

/// \brief Split-K combine for one output row, by the whole block (threads stride over
/// `head_dim`): `out = Σ_s o_s e^(m_s - M) / Σ_s l_s e^(m_s - M)` over the first `active`
/// chunks (M = max_s m_s); `active == 0` (no key visible) writes zeros.
/// \param part_o  (num_splits, head_dim) unnormalised partial outputs of this row
/// \param part_ml (num_splits, 2) each chunk's (m, l)
/// \param active  leading chunks that hold keys for this row (<= num_splits)
/// \param head_dim values per head
/// \param out     (head_dim) output row in the activation type A (rounded once)
template <typename A>
__device__ __forceinline__ void combine_split_partials(const float* __restrict__ part_o,
                                                       const float* __restrict__ part_ml,
                                                       int active, int head_dim,
                                                       A* __restrict__ out) {
  for (int e = threadIdx.x; e < head_dim; e += blockDim.x) {
    float m_all, l_all;
    const float o =
        merge_softmax_partials(part_ml, part_ml + 1, part_o + e, active, 2, head_dim, m_all, l_all);
    out[e] = from_float<A>(active == 0 ? 0.0f : o / l_all);
  }
}

}  // namespace nanoserve
