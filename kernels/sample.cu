// The device sampler: the host Sampler's whole pipeline (common/sampling/sampler.h) in one
// launch, one block per row, each row with its own parameters, seed and position.
//
//     logits ─► checks, max ─► greedy: first max id
//                           └► top-k cut ─► top-p cut ─► min-p ─► draw in id order ─► token
//                                                                 (+ log-softmax of the token)
//
// Versions (kernels/sampling.h documents the meaning):
//   sample  v01  fp64 throughout like the host; the weights exp((x - max) / T) are recomputed in
//                every pass instead of stored (a row of 152k doubles would be 1.2 MB per row of
//                scratch); top-k and top-p find their cut by a 16-pass radix search over the
//                weights' bits (kernels/sample_select.cuh), so no sort and no per-row buffer;
//                the uniform is drawn on the device by kernels/philox.h, the host's own code.
//                Cost per row: up to ~40 passes of exp over the vocabulary with top-k + top-p,
//                4 with temperature alone, 1 greedy. (Simulator timings are CPU time.)
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdint>

#include "kernels/kernel_args.h"
#include "kernels/philox.h"
#include "kernels/reduce.cuh"
#include "kernels/sample_select.cuh"
#include "kernels/sampling.h"

namespace nanoserve {
namespace {

using sample_detail::block_sums;
using sample_detail::CutSearch;
using sample_detail::kSampleBlock;
using sample_detail::nth_tied_id;
using sample_detail::radix_search;
using sample_detail::rank_key;
using sample_detail::RankCut;
using sample_detail::RowView;

// The host's SamplingParams::validate, as a predicate (NaN fails every comparison).
__device__ __forceinline__ bool valid_params(const SampleRowParams& p) {
  return p.temperature >= 0.0f && p.temperature <= FLT_MAX && p.top_k >= 0 && p.top_p > 0.0f &&
         p.top_p <= 1.0f && p.min_p >= 0.0f && p.min_p <= 1.0f;
}

// The smallest id whose logit is `max` (the host argmax: the first maximum).
__device__ int first_max_id(const float* x, int vocab, float max, int* found) {
  if (threadIdx.x == 0) *found = INT_MAX;
  __syncthreads();
  for (int i = threadIdx.x; i < vocab; i += blockDim.x) {
    if (x[i] == max) {
      atomicMin(found, i);  // ascending stride: this thread's first is its smallest
      break;
    }
  }
  __syncthreads();
  const int id = *found;
  __syncthreads();
  return id;
}

// Σ w over the final survivors: finite, inside `cut`, and w >= `floor` (min-p).
__device__ double kept_mass(const RowView& row, RankCut cut, double floor, double* scratch) {
  double v[1] = {0.0};
  for (int i = threadIdx.x; i < row.vocab; i += blockDim.x) {
    if (row.x[i] == -INFINITY) continue;
    const double w = row.weight(i);
    if (cut.keeps(rank_key(w), i) && w >= floor) v[0] += w;
  }
  block_sums(v, scratch);
  return v[0];
}

// top-p inside a tie class of weight v: the fewest j >= 1 ties with above + j v >= target,
// at most `ties` (the host adds the tied weights one by one until the mass reaches target).
__device__ int tied_members_needed(double above, double v, double target, int ties) {
  if (!(v > 0.0)) return ties;
  double j0 = ceil((target - above) / v);
  int j = j0 < 1.0 ? 1 : j0 > double(ties) ? ties : int(j0);
  while (j > 1 && above + double(j - 1) * v >= target) --j;
  while (j < ties && above + double(j) * v < target) ++j;
  return j;
}

// Inverse-CDF draw over probs w / total of the survivors, in ascending id order: the smallest id
// whose inclusive prefix sum exceeds u Σp (the host's sample_from); the largest id with a
// positive probability if rounding leaves none.
__device__ int draw_in_id_order(const RowView& row, RankCut cut, double floor, double total,
                                double u, double* scratch, int* found) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, n_warps = blockDim.x / 32;
  auto prob = [&](int i) {
    if (i >= row.vocab || row.x[i] == -INFINITY) return 0.0;
    const double w = row.weight(i);
    return cut.keeps(rank_key(w), i) && w >= floor ? w / total : 0.0;
  };
  double sum[1] = {0.0};
  int last = -1;
  for (int i = threadIdx.x; i < row.vocab; i += blockDim.x) {
    const double p = prob(i);
    sum[0] += p;
    if (p > 0.0) last = i;
  }
  block_sums(sum, scratch);
  const double target = u * sum[0];
  if (threadIdx.x == 0) *found = INT_MAX;
  __syncthreads();
  double carry = 0.0;
  int result = INT_MAX;
  for (int tile = 0; tile < row.vocab; tile += blockDim.x) {
    const int i = tile + threadIdx.x;
    const double p = prob(i);
    double incl = p;
    for (int offset = 1; offset < 32; offset *= 2) {
      const double up = __shfl_up_sync(kFullWarpMask, incl, offset);
      if (lane >= offset) incl += up;
    }
    if (lane == 31) scratch[warp] = incl;
    __syncthreads();
    double before = 0.0, tile_total = 0.0;
    for (int w = 0; w < n_warps; ++w) {
      if (w < warp) before += scratch[w];
      tile_total += scratch[w];
    }
    if (p > 0.0 && carry + before + incl > target) atomicMin(found, i);
    __syncthreads();
    result = *found;
    carry += tile_total;
    __syncthreads();  // scratch is rewritten by the next tile
    if (result != INT_MAX) break;  // uniform
  }
  if (result != INT_MAX) return result;
  if (threadIdx.x == 0) *found = -1;
  __syncthreads();
  atomicMax(found, last);
  __syncthreads();
  return *found;
}

// The sampled token of one non-greedy, valid row.
__device__ int sample_row(const RowView& row, const SampleRowParams& p, int n_finite,
                          double* scratch, int* iscratch, int* found) {
  RankCut cut{0, INT_MAX};  // every finite token
  if (p.top_k > 0 && p.top_k < n_finite) {  // the k-th of the ranking and its tie position
    const CutSearch s = radix_search(row, cut, false, double(p.top_k), scratch);
    const int n = p.top_k - int(s.above_count);
    cut = {s.key, nth_tied_id(row, cut, s.key, n, iscratch, found)};
  }
  if (p.top_p < 1.0f) {  // the member where the ranking's mass first reaches p of the total
    const double target = double(p.top_p) * kept_mass(row, cut, 0.0, scratch);
    const CutSearch s = radix_search(row, cut, true, target, scratch);
    const int n = tied_members_needed(s.above_mass, __longlong_as_double(
                                                        static_cast<long long>(s.key)),
                                      target, int(s.tie_count));
    cut = {s.key, nth_tied_id(row, cut, s.key, n, iscratch, found)};
  }
  // min-p: relative to the top survivor, whose weight is exp(0) = 1.
  const double floor = p.min_p > 0.0f ? double(p.min_p) * 1.0 : 0.0;
  const double total = kept_mass(row, cut, floor, scratch);
  const double u = uniform01(p.seed, p.position, RngStream::kSample);
  return draw_in_id_order(row, cut, floor, total, u, scratch, found);
}

// logits (rows, vocab), params (rows), tokens (rows), logprobs (rows) or null; grid (rows),
// block (kSampleBlock)
__global__ void sample_kernel_v01(const float* __restrict__ logits,
                                  const SampleRowParams* __restrict__ params, int vocab,
                                  int* __restrict__ tokens, float* __restrict__ logprobs) {
  __shared__ double scratch[sample_detail::kSumsScratch];
  __shared__ float fscratch[32];
  __shared__ int iscratch[32];
  __shared__ int found;
  const float* x = logits + static_cast<std::int64_t>(blockIdx.x) * vocab;  // (vocab)
  const SampleRowParams p = params[blockIdx.x];

  // Pass 1: the host's checks (NaN or +inf anywhere, nothing finite), the max, finite count.
  bool bad = !valid_params(p);
  float max = -INFINITY;
  double count[1] = {0.0};
  for (int i = threadIdx.x; i < vocab; i += blockDim.x) {
    const float v = x[i];
    bad = bad || v != v || v == INFINITY;
    if (v != -INFINITY && v == v) {
      max = fmaxf(max, v);
      count[0] += 1.0;
    }
  }
  bad = __syncthreads_or(bad);
  max = block_max(max, fscratch);
  block_sums(count, scratch);
  const int n_finite = int(count[0]);
  if (bad || n_finite == 0) {  // uniform
    if (threadIdx.x == 0) {
      tokens[blockIdx.x] = -1;
      if (logprobs != nullptr) logprobs[blockIdx.x] = NAN;
    }
    return;
  }

  const RowView row{x, vocab, double(max), double(p.temperature)};
  const int token = p.temperature == 0.0f
                        ? first_max_id(x, vocab, max, &found)
                        : sample_row(row, p, n_finite, scratch, iscratch, &found);
  if (logprobs != nullptr) {  // log-softmax of the raw logits at the token
    double sum[1] = {0.0};
    for (int i = threadIdx.x; i < vocab; i += blockDim.x) sum[0] += exp(double(x[i]) - row.max);
    block_sums(sum, scratch);
    if (threadIdx.x == 0) {
      logprobs[blockIdx.x] =
          token < 0 || token >= vocab ? NAN : float((double(x[token]) - row.max) - log(sum[0]));
    }
  }
  if (threadIdx.x == 0) tokens[blockIdx.x] = token;
}

}  // namespace

void launch_sample(const float* logits, const SampleRowParams* params, int rows, int vocab,
                   int* tokens, float* logprobs, cudaStream_t stream) {
  kargs::require_at_least("launch_sample", "rows", rows, 0);
  kargs::require_at_least("launch_sample", "vocab", vocab, 1);
  if (rows == 0) return;
  launch(sample_kernel_v01, dim3(rows), dim3(kSampleBlock), 0, stream, logits, params, vocab,
         tokens, logprobs);
}

}  // namespace nanoserve
