#pragma once
/// \file
/// \brief Block-wide building blocks of the device sampler (kernels/sample.cu): fp64
/// deterministic reductions, the per-token weight and ranking key of the host sampler, a radix
/// search for the cut of a ranking prefix, and the n-th id of a predicate in id order.
///
/// The host sampler ranks tokens by (weight desc, id asc) with weight
/// `w = exp((x - max) / T)` in fp64. Top-k, top-p and min-p each keep a *prefix* of that one
/// ranking, so the surviving set is always described by its last member, a `RankCut`
/// (key, id): a token survives iff `key > cut.key || (key == cut.key && id <= cut.id)`. The key
/// is the bit pattern of w (w >= 0, so the bits order like the values, and equal weights — the
/// host's ties — have equal keys).
///
/// Every reduction adds in a fixed order (strided slices per thread, a butterfly per warp, the
/// warp partials in warp order), so a result is a pure function of the row, the same on every
/// run and identical in every thread: control flow that depends on it stays uniform.

#include <climits>
#include <cmath>
#include <cstdint>

#include "kernels/cuda_compat.h"
#include "kernels/reduce.cuh"

namespace nanoserve {
namespace sample_detail {

/// \brief Threads per row (one block per row); a multiple of 32.
constexpr int kSampleBlock = 256;

/// \brief Values a `block_sums` call reduces per round.
constexpr int kSumsPerRound = 8;
/// \brief Shared doubles `block_sums` needs: a (kSumsPerRound, kSampleBlock) round of values
/// and (kSumsPerRound, 32) partials.
constexpr int kSumsScratch = kSumsPerRound * (kSampleBlock + 32);

/// \brief Deterministic block-wide sums of `N` fp64 values per thread, in place: every thread
/// gets the same bits. Through shared memory in rounds of 8 values (3 barriers a round, cheaper
/// than 5 shuffles per value): 32 threads per value each add 8 threads' values in thread order,
/// then every thread adds the 32 partials in order. Needs blockDim.x == kSampleBlock.
/// \param v       this thread's N values, replaced by the block sums
/// \param scratch (kSumsScratch) shared doubles, free for the duration of the call
template <int N>
__device__ __forceinline__ void block_sums(double (&v)[N], double* scratch) {
  constexpr int kPer = kSampleBlock / 32;  // values each partial adds
  double* round = scratch;                                      // (kSumsPerRound, kSampleBlock)
  double* partial = scratch + kSumsPerRound * kSampleBlock;     // (kSumsPerRound, 32)
  for (int base = 0; base < N; base += kSumsPerRound) {
    const int n = N - base < kSumsPerRound ? N - base : kSumsPerRound;
    for (int k = 0; k < n; ++k) round[k * kSampleBlock + threadIdx.x] = v[base + k];
    __syncthreads();
    const int k = threadIdx.x / 32, part = threadIdx.x % 32;
    if (k < n) {
      double s = 0.0;
      for (int j = 0; j < kPer; ++j) s += round[k * kSampleBlock + part * kPer + j];
      partial[k * 32 + part] = s;
    }
    __syncthreads();
    for (int kk = 0; kk < n; ++kk) {
      double s = 0.0;
      for (int j = 0; j < 32; ++j) s += partial[kk * 32 + j];
      v[base + kk] = s;
    }
    __syncthreads();  // round and partial are rewritten by the next round or the caller
  }
}

/// \brief One row of logits with the numbers every pass needs.
struct RowView {
  const float* x;  ///< (vocab) logits
  int vocab;       ///< logits in the row
  double max;      ///< the largest logit
  double t;        ///< temperature (> 0)

  /// \brief The host sampler's unnormalised probability `exp((x - max) / T)` in fp64.
  __device__ __forceinline__ double weight(int i) const { return exp((double(x[i]) - max) / t); }
};

/// \brief The ranking key of a weight: its bits (w >= 0, so they order like the values).
__device__ __forceinline__ std::uint64_t rank_key(double w) {
  return static_cast<std::uint64_t>(__double_as_longlong(w));
}

/// \brief The last member of a ranking prefix: (key, id) survives iff it ranks at or above it.
struct RankCut {
  std::uint64_t key;  ///< the last member's key
  int id;             ///< the last member's id

  /// \brief True when (key, id) is in the prefix.
  __device__ __forceinline__ bool keeps(std::uint64_t k, int i) const {
    return k > key || (k == key && i <= id);
  }
};

/// \brief What `radix_search` found.
struct CutSearch {
  std::uint64_t key;   ///< key of the member where the measure reaches the goal
  double above_mass;   ///< Σ w over kept tokens with a larger key
  double above_count;  ///< number of kept tokens with a larger key
  double tie_count;    ///< number of kept tokens with exactly `key`
};

/// \brief The largest key K such that the measure (`mass`: Σ w; else the count) of the kept
/// tokens (finite, inside `cut`) with key >= K reaches `goal`: the key of the ranking member at
/// which a prefix first reaches `goal`. Sixteen passes over the row, one 4-bit digit of the key
/// each, from the top: a digit's tokens are binned by the next digit, and the highest bin whose
/// running total (all larger keys plus the bins above) reaches `goal` fixes that digit. If
/// rounding leaves no bin reaching the goal, the lowest non-empty bin is taken (the whole set).
/// \param row     the row
/// \param cut     the prefix searched in
/// \param mass    measure by weight (top-p) or by count (top-k)
/// \param goal    > 0
/// \param scratch (kSumsScratch) shared doubles
__device__ inline CutSearch radix_search(const RowView& row, RankCut cut, bool mass, double goal,
                                         double* scratch) {
  constexpr int kBins = 16;
  std::uint64_t prefix = 0;  // the digits fixed so far: the key's bits above `shift + 4`
  CutSearch found{0, 0.0, 0.0, 0.0};
  for (int shift = 60; shift >= 0; shift -= 4) {
    // acc: [0, 16) weight per digit, [16, 32) count per digit, 32/33 weight/count above prefix
    double acc[2 * kBins + 2];
NS_UNROLL
    for (int b = 0; b < 2 * kBins + 2; ++b) acc[b] = 0.0;
    for (int i = threadIdx.x; i < row.vocab; i += blockDim.x) {
      if (row.x[i] == -INFINITY) continue;
      const double w = row.weight(i);
      const std::uint64_t key = rank_key(w);
      if (!cut.keeps(key, i)) continue;
      const std::uint64_t high = shift + 4 >= 64 ? 0 : key >> (shift + 4);
      if (high > prefix) {
        acc[2 * kBins] += w;
        acc[2 * kBins + 1] += 1.0;
      } else if (high == prefix) {
        const int digit = static_cast<int>((key >> shift) & 15u);
NS_UNROLL
        for (int b = 0; b < kBins; ++b) {
          acc[b] += digit == b ? w : 0.0;
          acc[kBins + b] += digit == b ? 1.0 : 0.0;
        }
      }
    }
    block_sums(acc, scratch);
    // Highest digit first (larger keys rank first); identical in every thread.
    double cum_mass = acc[2 * kBins], cum_count = acc[2 * kBins + 1];
    int digit = -1, lowest = -1;
    for (int d = kBins - 1; d >= 0; --d) {
      if (acc[kBins + d] == 0.0) continue;
      lowest = d;
      const double reach = mass ? cum_mass + acc[d] : cum_count + acc[kBins + d];
      if (reach >= goal) {
        digit = d;
        break;
      }
      cum_mass += acc[d];
      cum_count += acc[kBins + d];
    }
    if (digit < 0 && lowest >= 0) {  // rounding: the goal is the whole set; its last bin
      digit = lowest;
      cum_mass -= acc[lowest];
      cum_count -= acc[kBins + lowest];
    }
    if (digit < 0) digit = 0;  // empty prefix: cannot happen for a goal the set reaches
    prefix = (prefix << 4) | static_cast<std::uint64_t>(digit);
    found = {prefix, cum_mass, cum_count, acc[kBins + digit]};
  }
  return found;
}

/// \brief The `n`-th (1-based) smallest id of the kept tokens (finite, inside `cut`) whose key
/// is `key`, by a block-wide scan in id order, tile by tile; -1 if there are fewer than `n`.
/// \param row     the row
/// \param cut     the prefix
/// \param key     the key of the tie class
/// \param n       >= 1
/// \param scratch (32) shared ints
/// \param found   one shared int
__device__ inline int nth_tied_id(const RowView& row, RankCut cut, std::uint64_t key, int n,
                                  int* scratch, int* found) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, n_warps = blockDim.x / 32;
  if (threadIdx.x == 0) *found = -1;
  __syncthreads();
  int carry = 0, result = -1;
  for (int tile = 0; tile < row.vocab; tile += blockDim.x) {
    const int i = tile + threadIdx.x;
    bool flag = false;
    if (i < row.vocab && row.x[i] != -INFINITY) {
      const std::uint64_t k = rank_key(row.weight(i));
      flag = k == key && cut.keeps(k, i);
    }
    int incl = flag ? 1 : 0;
    for (int offset = 1; offset < 32; offset *= 2) {
      const int up = __shfl_up_sync(kFullWarpMask, incl, offset);
      if (lane >= offset) incl += up;
    }
    if (lane == 31) scratch[warp] = incl;
    __syncthreads();
    int before = 0, tile_total = 0;
    for (int w = 0; w < n_warps; ++w) {
      if (w < warp) before += scratch[w];
      tile_total += scratch[w];
    }
    if (flag && carry + before + incl == n) *found = i;  // exactly one thread
    __syncthreads();
    result = *found;
    carry += tile_total;
    __syncthreads();  // scratch is rewritten by the next tile
    if (result >= 0) break;  // uniform: every thread read the same value
  }
  return result;
}

}  // namespace sample_detail
}  // namespace nanoserve
