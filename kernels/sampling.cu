// Device-side sampling steps: argmax, temperature softmax, inverse-CDF draw (fp32, no filters).
// The whole sampler — top-k, top-p, min-p and the Philox draw on the device — is kernels/sample.cu.
//
// Not yet wired: no engine code calls these launchers today (the engine samples on the host
// with common/sampling's Sampler); a later issue wires device sampling into the engine. Until
// then tests/kernels/test_sampling.cpp keeps them equal to the host Sampler and bench_kernels
// times them.
//
// Versions (one each; every kernel is one block per row, a row being one request's logits):
//   argmax       v01  each thread keeps its first maximum over a strided slice, then the block
//                     reduces (value, id) pairs: larger value wins, equal values → lower id.
//   probs        v01  three passes (block max, block sum of the exponentials, write), with the
//                     temperature inside the exponent exactly where the host sampler puts it:
//                     exp((x - max) / t).
//   sample_from  v01  block-wide inclusive scan over tiles of blockDim weights (warp shuffles,
//                     then per-warp totals), stopping at the first tile whose running sum
//                     passes u * Σw.
#include <climits>
#include <cmath>
#include <cstdint>

#include "kernels/kernel_args.h"
#include "kernels/reduce.cuh"
#include "kernels/sampling.h"

namespace nanoserve {
namespace {

constexpr int kBlock = 256;

// ---------------------------------------------------------------------------------------------
// argmax

// (v, i) beats (best_v, best_i): larger value, or the same value at a lower id.
__device__ __forceinline__ bool beats(float v, int i, float best_v, int best_i) {
  return v > best_v || (v == best_v && i < best_i);
}

// The best (value, id) pair of the warp, by a butterfly: every lane gets it.
__device__ __forceinline__ void warp_argmax(float& best_v, int& best_i) {
  for (int offset = 16; offset > 0; offset /= 2) {
    const float v = __shfl_xor_sync(kFullWarpMask, best_v, offset);
    const int i = __shfl_xor_sync(kFullWarpMask, best_i, offset);
    if (beats(v, i, best_v, best_i)) {
      best_v = v;
      best_i = i;
    }
  }
}

// Argmax of one row by the whole block (-1 when the row holds NaN); every thread gets it.
__device__ int block_argmax(const float* row, int vocab) {
  __shared__ float v_s[32];
  __shared__ int i_s[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, n_warps = blockDim.x / 32;
  float best_v = -INFINITY;
  int best_i = INT_MAX;  // loses to any real id, so an all -inf row yields id 0 (as the host)
  bool nan = false;
  for (int i = threadIdx.x; i < vocab; i += blockDim.x) {
    const float v = row[i];
    nan = nan || v != v;
    if (beats(v, i, best_v, best_i)) {
      best_v = v;
      best_i = i;
    }
  }
  warp_argmax(best_v, best_i);
  if (lane == 0) {
    v_s[warp] = best_v;
    i_s[warp] = best_i;
  }
  const bool any_nan = __syncthreads_or(nan);  // also orders the writes above
  best_v = lane < n_warps ? v_s[lane] : -INFINITY;
  best_i = lane < n_warps ? i_s[lane] : INT_MAX;
  warp_argmax(best_v, best_i);
  __syncthreads();  // v_s / i_s may be reused by the caller's next call
  return any_nan ? -1 : best_i;
}

// logits (rows, vocab), tokens (rows); grid (rows), block (kBlock)
__global__ void argmax_kernel_v01(const float* __restrict__ logits, int vocab,
                                  int* __restrict__ tokens) {
  const int token = block_argmax(logits + static_cast<std::int64_t>(blockIdx.x) * vocab, vocab);
  if (threadIdx.x == 0) tokens[blockIdx.x] = token;
}

// ---------------------------------------------------------------------------------------------
// temperature softmax

// logits (rows, vocab), temperatures (rows), probs (rows, vocab), may alias logits: each
// thread writes only elements it read itself, after the last reduction; grid (rows)
__global__ void sampling_probs_kernel_v01(const float* logits, const float* __restrict__ temps,
                                          int vocab, float* probs) {
  __shared__ float scratch[32];
  const float* row = logits + static_cast<std::int64_t>(blockIdx.x) * vocab;  // (vocab)
  float* out = probs + static_cast<std::int64_t>(blockIdx.x) * vocab;         // (vocab)
  const float t = temps[blockIdx.x];
  if (t == 0.0f) {  // greedy: one-hot at the argmax
    const int best = block_argmax(row, vocab);
    for (int i = threadIdx.x; i < vocab; i += blockDim.x) {
      out[i] = best < 0 ? NAN : (i == best ? 1.0f : 0.0f);
    }
    return;
  }
  bool bad = !(t > 0.0f);  // negative or NaN temperature
  float max = -INFINITY;
  for (int i = threadIdx.x; i < vocab; i += blockDim.x) {
    bad = bad || row[i] != row[i];  // fmaxf would silently skip a NaN
    max = fmaxf(max, row[i]);
  }
  bad = __syncthreads_or(bad);
  max = block_max(max, scratch);
  float sum = 0.0f;
  for (int i = threadIdx.x; i < vocab; i += blockDim.x) sum += expf((row[i] - max) / t);
  sum = block_sum(sum, scratch);
  for (int i = threadIdx.x; i < vocab; i += blockDim.x) {
    out[i] = bad ? NAN : expf((row[i] - max) / t) / sum;
  }
}

// ---------------------------------------------------------------------------------------------
// inverse-CDF draw

// weights (rows, vocab), u (rows), tokens (rows); grid (rows), block (kBlock)
__global__ void sample_from_kernel_v01(const float* __restrict__ weights,
                                       const float* __restrict__ u, int vocab,
                                       int* __restrict__ tokens) {
  __shared__ float scratch[32];
  __shared__ float warp_totals[32];
  __shared__ int first;          // smallest id found so far (INT_MAX: none)
  __shared__ int last_positive;  // largest id with a positive weight (-1: none)
  const float* row = weights + static_cast<std::int64_t>(blockIdx.x) * vocab;  // (vocab)
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, n_warps = blockDim.x / 32;
  const float draw = u[blockIdx.x];

  // Σw, and whether the row is a valid input at all.
  bool bad = !(draw >= 0.0f && draw < 1.0f);
  float total = 0.0f;
  int my_last = -1;
  for (int i = threadIdx.x; i < vocab; i += blockDim.x) {
    const float w = row[i];
    bad = bad || !(w >= 0.0f);  // negative or NaN
    total += w;
    if (w > 0.0f) my_last = i;
  }
  if (threadIdx.x == 0) {
    first = INT_MAX;
    last_positive = -1;
  }
  __syncthreads();
  atomicMax(&last_positive, my_last);
  bad = __syncthreads_or(bad);
  total = block_sum(total, scratch);
  if (bad || !(total > 0.0f)) {  // uniform: the whole block leaves together
    if (threadIdx.x == 0) tokens[blockIdx.x] = -1;
    return;
  }
  const float target = draw * total;

  // Running inclusive prefix sums, one tile of blockDim ids at a time, in id order.
  float carry = 0.0f;
  for (int tile = 0; tile < vocab; tile += blockDim.x) {
    const int i = tile + threadIdx.x;
    float incl = i < vocab ? row[i] : 0.0f;
    for (int offset = 1; offset < 32; offset *= 2) {
      const float n = __shfl_up_sync(kFullWarpMask, incl, offset);
      if (lane >= offset) incl += n;
    }
    if (lane == 31) warp_totals[warp] = incl;
    __syncthreads();
    float before = 0.0f, tile_total = 0.0f;
    for (int w = 0; w < n_warps; ++w) {
      if (w < warp) before += warp_totals[w];
      tile_total += warp_totals[w];
    }
    if (i < vocab && carry + before + incl > target) atomicMin(&first, i);
    __syncthreads();
    const int found = first;
    carry += tile_total;
    __syncthreads();  // warp_totals is rewritten by the next tile
    if (found != INT_MAX) break;  // uniform: every thread read the same `first`
  }
  if (threadIdx.x == 0) tokens[blockIdx.x] = first != INT_MAX ? first : last_positive;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// launchers

void launch_argmax(const float* logits, int rows, int vocab, int* tokens, cudaStream_t stream) {
  kargs::require_at_least("launch_argmax", "rows", rows, 0);
  kargs::require_at_least("launch_argmax", "vocab", vocab, 1);
  if (rows == 0) return;
  launch(argmax_kernel_v01, dim3(rows), dim3(kBlock), 0, stream, logits, vocab, tokens);
}

void launch_sampling_probs(const float* logits, const float* temperatures, int rows, int vocab,
                           float* probs, cudaStream_t stream) {
  kargs::require_at_least("launch_sampling_probs", "rows", rows, 0);
  kargs::require_at_least("launch_sampling_probs", "vocab", vocab, 1);
  if (rows == 0) return;
  launch(sampling_probs_kernel_v01, dim3(rows), dim3(kBlock), 0, stream, logits, temperatures,
         vocab, probs);
}

void launch_sample_from(const float* weights, const float* u, int rows, int vocab, int* tokens,
                        cudaStream_t stream) {
  kargs::require_at_least("launch_sample_from", "rows", rows, 0);
  kargs::require_at_least("launch_sample_from", "vocab", vocab, 1);
  if (rows == 0) return;
  launch(sample_from_kernel_v01, dim3(rows), dim3(kBlock), 0, stream, weights, u, vocab, tokens);
}

}  // namespace nanoserve
