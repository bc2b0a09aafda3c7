// RMSNorm: out = x / sqrt(mean(x^2) + eps) * gain, per row.
//
// Versions:
//   v01  one block per row: each thread sums the squares of a strided slice, the block reduces
//        them (warp shuffles, then one value per warp through shared memory), then scales.
//   v02  one warp per row, 8 rows per block: the reduction is five shuffles with no shared
//        memory and no __syncthreads. For dim <= ~1K a row is too small to keep a whole block
//        busy, so v01 leaves most of its threads idle in the reduction; v02 packs rows instead.
//
// Both compute the scale as the oracle does, 1 / sqrt(sum / dim + eps) with a correctly rounded
// sqrt and division, so only the summation order differs from oracle::rmsnorm.
#include <cstdint>

#include "kernels/dtype.cuh"
#include "kernels/kernel_args.h"
#include "kernels/reduce.cuh"
#include "kernels/rmsnorm.h"

namespace nanoserve {
namespace {

// ---------------------------------------------------------------------------------------------
// kernels

// x (rows, dim), gain (dim), out (rows, dim) — out may alias x: every thread reads its elements
// of x before the reduction and writes the same elements after it.
// grid (rows), block (kBlockV01)
template <typename T, typename A>
__global__ void rmsnorm_kernel_v01(const A* x, const T* __restrict__ gain, int dim, float eps,
                                   A* out) {
  __shared__ float scratch[32];
  const A* row = x + static_cast<std::int64_t>(blockIdx.x) * dim;  // (dim)
  A* row_out = out + static_cast<std::int64_t>(blockIdx.x) * dim;  // (dim)
  float sum_sq = 0.0f;
  for (int i = threadIdx.x; i < dim; i += blockDim.x) {
    const float v = to_float(row[i]);
    sum_sq += v * v;
  }
  sum_sq = block_sum(sum_sq, scratch);
  const float inv_rms = 1.0f / sqrtf(sum_sq / static_cast<float>(dim) + eps);
  for (int i = threadIdx.x; i < dim; i += blockDim.x) {
    row_out[i] = from_float<A>(to_float(row[i]) * inv_rms * to_float(gain[i]));
  }
}

// x (rows, dim), gain (dim), out (rows, dim); grid (ceil(rows / warps per block)), block (256)
template <typename T, typename A>
__global__ void rmsnorm_kernel_v02(const A* x, const T* __restrict__ gain, int rows, int dim,
                                   float eps, A* out) {
  const int lane = threadIdx.x % 32;
  const int r = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  if (r >= rows) return;  // whole warps exit; nothing below synchronises the block
  const A* row = x + static_cast<std::int64_t>(r) * dim;  // (dim)
  A* row_out = out + static_cast<std::int64_t>(r) * dim;  // (dim)
  float sum_sq = 0.0f;
  for (int i = lane; i < dim; i += 32) {
    const float v = to_float(row[i]);
    sum_sq += v * v;
  }
  sum_sq = warp_sum(sum_sq);
  const float inv_rms = 1.0f / sqrtf(sum_sq / static_cast<float>(dim) + eps);
  for (int i = lane; i < dim; i += 32) {
    row_out[i] = from_float<A>(to_float(row[i]) * inv_rms * to_float(gain[i]));
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// launchers

template <typename T, typename A>
void launch_rmsnorm(const nondeduced_t<A>* x, const T* gain, int rows, int dim, float eps,
                    nondeduced_t<A>* out,
                    cudaStream_t stream, int version) {
  constexpr const char* kOp = "launch_rmsnorm";
  kargs::require_at_least(kOp, "rows", rows, 0);
  kargs::require_at_least(kOp, "dim", dim, 1);
  kargs::require_version(kOp, version, kRmsnormVersions);
  if (rows == 0) return;
  if (version == 0) version = dim <= 1024 ? 2 : 1;
  constexpr int kBlock = 256;
  if (version == 1) {
    launch(rmsnorm_kernel_v01<T, A>, dim3(rows), dim3(kBlock), 0, stream, x, gain, dim, eps, out);
  } else {
    const unsigned grid = kargs::blocks_for(rows, kBlock / 32);
    launch(rmsnorm_kernel_v02<T, A>, dim3(grid), dim3(kBlock), 0, stream, x, gain, rows, dim, eps,
           out);
  }
}

#define NANOSERVE_INSTANTIATE_RMSNORM(T, A)                                           \
  template void launch_rmsnorm<T, A>(const A*, const T*, int, int, float, A*, cudaStream_t, \
                                     int);
NANOSERVE_FOR_EACH_STORAGE_PAIR(NANOSERVE_INSTANTIATE_RMSNORM)
#undef NANOSERVE_INSTANTIATE_RMSNORM

}  // namespace nanoserve
