// RoPE: rotate each pair (a, b) of every q/k head by the row's position times the pair's
// frequency: (a, b) -> (a cos - b sin, a sin + b cos).
//
// Versions:
//   v01  one block per row: the head_dim/2 (cos, sin) values of the row's position are computed
//        once into shared memory, then every (head, pair) of q and k is rotated by one thread.
//        A row's n_heads + n_kv_heads heads share one angle per pair, so the transcendental work
//        drops by that factor compared with a thread per element computing its own angle.
#include <cmath>
#include <cstdint>

#include "kernels/dtype.cuh"
#include "kernels/kernel_args.h"
#include "kernels/rope.h"

namespace nanoserve {
namespace {

// The pair frequencies, by value in the kernel's parameters (512 bytes, well inside the 4 KB
// parameter space): nothing to allocate or copy per launch.
struct RopeFrequencies {
  float inv_freq[kRopeMaxHeadDim / 2];  // (head_dim / 2)
};

// ---------------------------------------------------------------------------------------------
// kernels

// Rotates the n_heads heads of one row; cos_t, sin_t (head_dim / 2) shared.
template <typename A>
__device__ __forceinline__ void rotate_heads(A* row, int n_heads, int head_dim,
                                             RopePairing pairing, const float* cos_t,
                                             const float* sin_t) {
  const int half = head_dim / 2;
  for (int idx = threadIdx.x; idx < n_heads * half; idx += blockDim.x) {
    const int h = idx / half, i = idx % half;
    A* head = row + static_cast<std::int64_t>(h) * head_dim;  // (head_dim)
    const int ia = pairing == RopePairing::kAdjacentPairs ? 2 * i : i;
    const int ib = pairing == RopePairing::kAdjacentPairs ? 2 * i + 1 : i + half;
    const float a = to_float(head[ia]), b = to_float(head[ib]), c = cos_t[i], s = sin_t[i];
    head[ia] = from_float<A>(a * c - b * s);
    head[ib] = from_float<A>(a * s + b * c);
  }
}

// q (rows, n_heads, head_dim), k (rows, n_kv_heads, head_dim), positions (rows);
// grid (rows), block (kBlock)
template <typename A>
__global__ void rope_kernel_v01(A* q, A* k, const int* __restrict__ positions,
                                int n_heads, int n_kv_heads, int head_dim, RopeFrequencies freqs,
                                RopePairing pairing) {
  __shared__ float cos_t[kRopeMaxHeadDim / 2];
  __shared__ float sin_t[kRopeMaxHeadDim / 2];
  const int r = blockIdx.x;
  const float pos = static_cast<float>(positions[r]);
  for (int i = threadIdx.x; i < head_dim / 2; i += blockDim.x) {
    const float angle = pos * freqs.inv_freq[i];  // fp32, as the oracle
    sincosf(angle, &sin_t[i], &cos_t[i]);
  }
  __syncthreads();
  rotate_heads(q + static_cast<std::int64_t>(r) * n_heads * head_dim, n_heads, head_dim, pairing,
               cos_t, sin_t);
  rotate_heads(k + static_cast<std::int64_t>(r) * n_kv_heads * head_dim, n_kv_heads, head_dim,
               pairing, cos_t, sin_t);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// launchers

namespace {

void check_rope_shape(const char* op, int rows, int n_heads, int n_kv_heads, int head_dim) {
  kargs::require_at_least(op, "rows", rows, 0);
  kargs::require_at_least(op, "n_heads", n_heads, 0);
  kargs::require_at_least(op, "n_kv_heads", n_kv_heads, 0);
  kargs::require(head_dim >= 2 && head_dim <= kRopeMaxHeadDim && head_dim % 2 == 0, op,
                 "head_dim = " + std::to_string(head_dim) + " must be even and in [2, " +
                     std::to_string(kRopeMaxHeadDim) + "]");
}

template <typename A>
void launch_rope_table(A* q, A* k, const int* positions, int rows, int n_heads,
                       int n_kv_heads, int head_dim, const RopeFrequencies& freqs,
                       RopePairing pairing, cudaStream_t stream) {
  if (rows == 0) return;
  constexpr int kBlock = 128;
  launch(rope_kernel_v01<A>, dim3(rows), dim3(kBlock), 0, stream, q, k, positions, n_heads,
         n_kv_heads, head_dim, freqs, pairing);
}

}  // namespace

template <typename A>
void launch_rope(nondeduced_t<A>* q, nondeduced_t<A>* k, const int* positions, int rows,
                 int n_heads, int n_kv_heads,
                 int head_dim, float theta, RopePairing pairing, cudaStream_t stream) {
  constexpr const char* kOp = "launch_rope";
  check_rope_shape(kOp, rows, n_heads, n_kv_heads, head_dim);
  kargs::require(theta > 0.0f, kOp, "theta = " + std::to_string(theta) + " must be > 0");
  RopeFrequencies freqs{};
  for (int i = 0; i < head_dim / 2; ++i) {
    // The expression of oracle::rope_frequency, term for term (fp32 pow, then fp32 division).
    freqs.inv_freq[i] = 1.0f / std::pow(theta, float(2 * i) / float(head_dim));
  }
  launch_rope_table(q, k, positions, rows, n_heads, n_kv_heads, head_dim, freqs, pairing, stream);
}

template <typename A>
void launch_rope(nondeduced_t<A>* q, nondeduced_t<A>* k, const int* positions, int rows,
                 int n_heads, int n_kv_heads,
                 int head_dim, const float* inv_freq, RopePairing pairing, cudaStream_t stream) {
  constexpr const char* kOp = "launch_rope";
  check_rope_shape(kOp, rows, n_heads, n_kv_heads, head_dim);
  kargs::require(inv_freq != nullptr, kOp, "inv_freq is null");
  RopeFrequencies freqs{};
  for (int i = 0; i < head_dim / 2; ++i) {
    kargs::require(std::isfinite(inv_freq[i]) && inv_freq[i] > 0.0f, kOp,
                   "inv_freq[" + std::to_string(i) + "] = " + std::to_string(inv_freq[i]) +
                       " must be finite and > 0");
    freqs.inv_freq[i] = inv_freq[i];
  }
  launch_rope_table(q, k, positions, rows, n_heads, n_kv_heads, head_dim, freqs, pairing, stream);
}

#define NANOSERVE_INSTANTIATE_ROPE(A)                                                          \
  template void launch_rope<A>(A*, A*, const int*, int, int, int, int, float, RopePairing,     \
                               cudaStream_t);                                                  \
  template void launch_rope<A>(A*, A*, const int*, int, int, int, int, const float*,           \
                               RopePairing, cudaStream_t);
NANOSERVE_FOR_EACH_STORAGE_TYPE(NANOSERVE_INSTANTIATE_ROPE)
#undef NANOSERVE_INSTANTIATE_ROPE

}  // namespace nanoserve
