// Softmax over rows: out = exp(x - max) / sum(exp(x - max)).
//
// Versions:
//   v01  one block per row, three passes: block max, block sum of exp(x - max), write. Each
//        pass reads the row from global memory (3 reads + 1 write per element).
//   v02  the online normaliser (Milakov & Gimelshein, "Online normalizer calculation for
//        softmax", 2018): each thread keeps a running (max m, sum d) and rescales d whenever m
//        grows, d = d e^(m - m') + e^(x - m'); the block merges the (m, d) pairs. Max and sum
//        in one read, so 2 reads + 1 write per element — what a memory-bound kernel wants.
#include <cmath>
#include <cstdint>

#include "kernels/kernel_args.h"
#include "kernels/reduce.cuh"
#include "kernels/softmax.h"

namespace nanoserve {
namespace {

constexpr int kBlock = 256;

// ---------------------------------------------------------------------------------------------
// v01

// x (rows, n), out (rows, n) — out may alias x (each thread rewrites elements it alone read
// after the last reduction); grid (rows), block (kBlock)
__global__ void softmax_kernel_v01(const float* x, int n, float* out) {
  __shared__ float scratch[32];
  const float* row = x + static_cast<std::int64_t>(blockIdx.x) * n;  // (n)
  float* row_out = out + static_cast<std::int64_t>(blockIdx.x) * n;  // (n)
  float max = -INFINITY;
  for (int i = threadIdx.x; i < n; i += blockDim.x) max = fmaxf(max, row[i]);
  max = block_max(max, scratch);
  float sum = 0.0f;
  for (int i = threadIdx.x; i < n; i += blockDim.x) sum += expf(row[i] - max);
  sum = block_sum(sum, scratch);
  for (int i = threadIdx.x; i < n; i += blockDim.x) row_out[i] = expf(row[i] - max) / sum;
}

// ---------------------------------------------------------------------------------------------
// v02

// (m, d) <- (m, d) merged with (m_o, d_o). A side that has seen nothing (m = -inf) contributes
// 0; two empty sides stay empty instead of producing exp(-inf - -inf) = NaN.
__device__ __forceinline__ void merge_online(float& m, float& d, float m_o, float d_o) {
  const float m_new = fmaxf(m, m_o);
  if (m_new == -INFINITY) return;
  d = (m == -INFINITY ? 0.0f : d * expf(m - m_new)) +
      (m_o == -INFINITY ? 0.0f : d_o * expf(m_o - m_new));
  m = m_new;
}

// x (rows, n), out (rows, n), may alias; grid (rows), block (kBlock)
__global__ void softmax_kernel_v02(const float* x, int n, float* out) {
  __shared__ float m_s[32];
  __shared__ float d_s[32];
  const float* row = x + static_cast<std::int64_t>(blockIdx.x) * n;  // (n)
  float* row_out = out + static_cast<std::int64_t>(blockIdx.x) * n;  // (n)
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, n_warps = blockDim.x / 32;

  float m = -INFINITY, d = 0.0f;
  for (int i = threadIdx.x; i < n; i += blockDim.x) merge_online(m, d, row[i], 1.0f);
  // Warp, then block: the same butterfly as warp_sum, on pairs.
  for (int offset = 16; offset > 0; offset /= 2) {
    const float m_o = __shfl_xor_sync(kFullWarpMask, m, offset);
    const float d_o = __shfl_xor_sync(kFullWarpMask, d, offset);
    merge_online(m, d, m_o, d_o);
  }
  if (lane == 0) {
    m_s[warp] = m;
    d_s[warp] = d;
  }
  __syncthreads();
  m = lane < n_warps ? m_s[lane] : -INFINITY;
  d = lane < n_warps ? d_s[lane] : 0.0f;
  for (int offset = 16; offset > 0; offset /= 2) {
    const float m_o = __shfl_xor_sync(kFullWarpMask, m, offset);
    const float d_o = __shfl_xor_sync(kFullWarpMask, d, offset);
    merge_online(m, d, m_o, d_o);
  }
  // An all -inf row leaves (m, d) = (-inf, 0): exp(-inf - -inf) / 0 = NaN, as the oracle.
  for (int i = threadIdx.x; i < n; i += blockDim.x) row_out[i] = expf(row[i] - m) / d;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// launchers

void launch_softmax(const float* x, int rows, int n, float* out, cudaStream_t stream,
                    int version) {
  constexpr const char* kOp = "launch_softmax";
  kargs::require_at_least(kOp, "rows", rows, 0);
  kargs::require_at_least(kOp, "n", n, 1);
  kargs::require_version(kOp, version, kSoftmaxVersions);
  if (rows == 0) return;
  if (version == 1) {
    launch(softmax_kernel_v01, dim3(rows), dim3(kBlock), 0, stream, x, n, out);
  } else {
    launch(softmax_kernel_v02, dim3(rows), dim3(kBlock), 0, stream, x, n, out);
  }
}

}  // namespace nanoserve
