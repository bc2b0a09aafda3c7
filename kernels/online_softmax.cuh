#pragma once
/// \file
/// \brief The online-softmax algebra the streaming attention kernels share (contiguous decode
/// v02, paged decode v02): merging two partial softmax states, and the split-K ("flash-
/// decoding") combine of per-chunk partial results.
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

/// \brief Split-K combine for one output row, by the whole block (threads stride over
/// `head_dim`): `out = Σ_s o_s e^(m_s - M) / Σ_s l_s e^(m_s - M)` over the first `active`
/// chunks (M = max_s m_s); `active == 0` (no key visible) writes zeros.
/// \param part_o  (num_splits, head_dim) unnormalised partial outputs of this row
/// \param part_ml (num_splits, 2) each chunk's (m, l)
/// \param active  leading chunks that hold keys for this row (<= num_splits)
/// \param head_dim values per head
/// \param out     (head_dim) fp32 output row
__device__ __forceinline__ void combine_split_partials(const float* __restrict__ part_o,
                                                       const float* __restrict__ part_ml,
                                                       int active, int head_dim,
                                                       float* __restrict__ out) {
  float m_all = -INFINITY;
  for (int s = 0; s < active; ++s) m_all = fmaxf(m_all, part_ml[2 * s]);
  for (int e = threadIdx.x; e < head_dim; e += blockDim.x) {
    float o = 0.0f, l_all = 0.0f;
    for (int s = 0; s < active; ++s) {
      const float f = __expf(part_ml[2 * s] - m_all);
      o += part_o[static_cast<std::int64_t>(s) * head_dim + e] * f;
      l_all += part_ml[2 * s + 1] * f;
    }
    out[e] = active == 0 ? 0.0f : o / l_all;
  }
}

}  // namespace nanoserve
