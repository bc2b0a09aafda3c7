// RoPE: rotate each pair (a, b) of every q/k head by the row's position times the pair's
// frequency: (a, b) -> (a cos - b sin, a sin + b cos).
//
// Versions:
//   v01  one block per row: the head_dim/2 (cos, sin) values of the row's position are computed
//        once into shared memory, then every (head, pair) of q and k is rotated by one thread.
//        A row's n_heads + n_kv_heads heads share one angle per pair, so the transcendental work
//        drops by that factor compared with a thread per element computing its own angle.
//   v02  RoPE fused with the KV append (launch_rope_kv_append): the same block per row reads
//        the row's q, k, v where the QKV projection left them (one strided buffer), adds the
//        biases if any, and writes rotated q to the attention input and rotated k and v
//        straight into the row's cache slot. Unfused, RoPE reads and writes k in place and the
//        append reads it again; fused, k is read once and rotated on its way to the cache.
//        Activation traffic per row falls from 2 q_dim + 4 kv_dim to 2 q_dim + 2 kv_dim (plus
//        2 kv_dim cache values either way), and one launch per layer disappears — small bytes
//        (attention and the weights dwarf them), a real launch.
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

// Rotates the n_heads heads of one row from `src` into `dst` (which may be `src`: each pair is
// read before it is written, by the same thread), adding `bias` (n_heads · head_dim, fp32) first
// when it is not null; cos_t, sin_t (head_dim / 2) shared.
template <typename S, typename D>
__device__ __forceinline__ void rotate_heads(const S* src, D* dst, const float* bias, int n_heads,
                                             int head_dim, RopePairing pairing,
                                             const float* cos_t, const float* sin_t) {
  const int half = head_dim / 2;
  for (int idx = threadIdx.x; idx < n_heads * half; idx += blockDim.x) {
    const int h = idx / half, i = idx % half;
    const std::int64_t head = static_cast<std::int64_t>(h) * head_dim;
    const int ia = pairing == RopePairing::kAdjacentPairs ? 2 * i : i;
    const int ib = pairing == RopePairing::kAdjacentPairs ? 2 * i + 1 : i + half;
    float a = to_float(src[head + ia]), b = to_float(src[head + ib]);
    if (bias != nullptr) {  // a branch, not `+ 0.0f`: -0 + 0 would turn the sign of a zero
      a += bias[head + ia];
      b += bias[head + ib];
    }
    const float c = cos_t[i], s = sin_t[i];
    dst[head + ia] = from_float<D>(a * c - b * s);
    dst[head + ib] = from_float<D>(a * s + b * c);
  }
}

// The (cos, sin) of every pair of head_dim at `pos`, into shared cos_t, sin_t (head_dim / 2).
__device__ __forceinline__ void angle_table(float pos, int head_dim, const RopeFrequencies& freqs,
                                            float* cos_t, float* sin_t) {
  for (int i = threadIdx.x; i < head_dim / 2; i += blockDim.x) {
    const float angle = pos * freqs.inv_freq[i];  // fp32, as the oracle
    sincosf(angle, &sin_t[i], &cos_t[i]);
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
  angle_table(static_cast<float>(positions[r]), head_dim, freqs, cos_t, sin_t);
  __syncthreads();
  A* q_row = q + static_cast<std::int64_t>(r) * n_heads * head_dim;     // (n_heads, head_dim)
  A* k_row = k + static_cast<std::int64_t>(r) * n_kv_heads * head_dim;  // (n_kv_heads, head_dim)
  rotate_heads(q_row, q_row, nullptr, n_heads, head_dim, pairing, cos_t, sin_t);
  rotate_heads(k_row, k_row, nullptr, n_kv_heads, head_dim, pairing, cos_t, sin_t);
}

// in: row r's q, k, v (strided), positions (rows), q_out (rows, n_heads, head_dim), cache rows
// (num_slots, kv_dim); grid (rows), block (kBlock)
template <typename T, typename A>
__global__ void rope_kv_append_kernel_v02(QkvRows<A> in, const int* __restrict__ positions,
                                          int n_heads, int n_kv_heads, int head_dim,
                                          RopeFrequencies freqs, RopePairing pairing,
                                          A* __restrict__ q_out, KVCacheRows<T> cache) {
  __shared__ float cos_t[kRopeMaxHeadDim / 2];
  __shared__ float sin_t[kRopeMaxHeadDim / 2];
  const int r = blockIdx.x;
  angle_table(static_cast<float>(positions[r]), head_dim, freqs, cos_t, sin_t);
  __syncthreads();
  const int kv_dim = n_kv_heads * head_dim;
  rotate_heads(in.q + r * in.q_stride, q_out + static_cast<std::int64_t>(r) * n_heads * head_dim,
               in.q_bias, n_heads, head_dim, pairing, cos_t, sin_t);
  const std::int64_t slot = cache.slots[r];
  if (slot < 0 || slot >= cache.num_slots) return;  // padding (-1): q only, no K/V (whole block)
  rotate_heads(in.k + r * in.kv_stride, cache.k_cache + slot * kv_dim, in.k_bias, n_kv_heads,
               head_dim, pairing, cos_t, sin_t);
  const A* v_row = in.v + r * in.kv_stride;  // (kv_dim)
  T* v_dst = cache.v_cache + slot * kv_dim;  // (kv_dim)
  for (int i = threadIdx.x; i < kv_dim; i += blockDim.x) {
    float v = to_float(v_row[i]);
    if (in.v_bias != nullptr) v += in.v_bias[i];
    v_dst[i] = from_float<T>(v);
  }
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

// The launchers' table: the checked frequencies of `inv_freq` (theta form: computed from theta).
RopeFrequencies checked_table(const char* op, int head_dim, const float* inv_freq) {
  kargs::require(inv_freq != nullptr, op, "inv_freq is null");
  RopeFrequencies freqs{};
  for (int i = 0; i < head_dim / 2; ++i) {
    kargs::require(std::isfinite(inv_freq[i]) && inv_freq[i] > 0.0f, op,
                   "inv_freq[" + std::to_string(i) + "] = " + std::to_string(inv_freq[i]) +
                       " must be finite and > 0");
    freqs.inv_freq[i] = inv_freq[i];
  }
  return freqs;
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
  const RopeFrequencies freqs = checked_table(kOp, head_dim, inv_freq);
  launch_rope_table(q, k, positions, rows, n_heads, n_kv_heads, head_dim, freqs, pairing, stream);
}

template <typename T, typename A>
void launch_rope_kv_append(const QkvRows<A>& in, const int* positions, int rows, int n_heads,
                           int n_kv_heads, int head_dim, const float* inv_freq,
                           RopePairing pairing, A* q_out, const KVCacheRows<T>& cache,
                           cudaStream_t stream) {
  constexpr const char* kOp = "launch_rope_kv_append";
  check_rope_shape(kOp, rows, n_heads, n_kv_heads, head_dim);
  kargs::require_at_least(kOp, "n_kv_heads", n_kv_heads, 1);
  kargs::require_at_least(kOp, "num_slots", cache.num_slots, 0);
  const std::int64_t q_dim = std::int64_t(n_heads) * head_dim;
  const std::int64_t kv_dim = std::int64_t(n_kv_heads) * head_dim;
  kargs::require(in.q_stride >= q_dim && in.kv_stride >= kv_dim, kOp,
                 "strides (" + std::to_string(in.q_stride) + ", " + std::to_string(in.kv_stride) +
                     ") are shorter than a row of q (" + std::to_string(q_dim) +
                     ") or of k and v (" + std::to_string(kv_dim) + ")");
  const RopeFrequencies freqs = checked_table(kOp, head_dim, inv_freq);
  if (rows == 0) return;
  kargs::require(in.q != nullptr && in.k != nullptr && in.v != nullptr && positions != nullptr &&
                     q_out != nullptr && cache.k_cache != nullptr && cache.v_cache != nullptr &&
                     cache.slots != nullptr,
                 kOp, "a buffer is null");
  constexpr int kBlock = 128;
  launch(rope_kv_append_kernel_v02<T, A>, dim3(rows), dim3(kBlock), 0, stream, in, positions,
         n_heads, n_kv_heads, head_dim, freqs, pairing, q_out, cache);
}

#define NANOSERVE_INSTANTIATE_ROPE(A)                                                          \
  template void launch_rope<A>(A*, A*, const int*, int, int, int, int, float, RopePairing,     \
                               cudaStream_t);                                                  \
  template void launch_rope<A>(A*, A*, const int*, int, int, int, int, const float*,           \
                               RopePairing, cudaStream_t);
NANOSERVE_FOR_EACH_STORAGE_TYPE(NANOSERVE_INSTANTIATE_ROPE)
#undef NANOSERVE_INSTANTIATE_ROPE

// Every (cache, activation) pair: the engine's KV type is independent of its activation type.
#define NANOSERVE_INSTANTIATE_ROPE_KV_APPEND(T, A)                                               \
  template void launch_rope_kv_append<T, A>(const QkvRows<A>&, const int*, int, int, int, int,  \
                                            const float*, RopePairing, A*,                      \
                                            const KVCacheRows<T>&, cudaStream_t);
NANOSERVE_FOR_EACH_STORAGE_PAIR(NANOSERVE_INSTANTIATE_ROPE_KV_APPEND)
#undef NANOSERVE_INSTANTIATE_ROPE_KV_APPEND

}  // namespace nanoserve
