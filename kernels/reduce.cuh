#pragma once
/// \file
/// \brief Warp- and block-wide reductions (sum, max) with the `_sync` shuffles only: the one copy
/// every kernel family uses (normalisation, attention, GEMV, sampling).
///
/// Block reductions assume `blockDim.x` is a multiple of 32 (every launcher in kernels/ picks
/// such a size) and that every thread of the block calls them (they contain `__syncthreads`).

#include <cmath>

#include "kernels/cuda_compat.h"

namespace nanoserve {

/// \brief Mask of all 32 lanes, for warp intrinsics that every lane reaches.
constexpr unsigned kFullWarpMask = 0xffffffffu;

/// \brief Sum over each aligned group of `width` lanes (a power of two, 1..32): a butterfly of
/// log2(width) xor-shuffles, after which every lane holds its group's sum. All 32 lanes must
/// call it (offsets below `width` never leave the group).
__device__ __forceinline__ float group_sum(float v, int width) {
  for (int offset = width / 2; offset > 0; offset /= 2) {
    v += __shfl_xor_sync(kFullWarpMask, v, offset);
  }
  return v;
}

/// \brief Sum over the 32 lanes of a warp (butterfly: every lane gets the result).
__device__ __forceinline__ float warp_sum(float v) { return group_sum(v, 32); }

/// \brief Max over the 32 lanes of a warp (every lane gets the result).
__device__ __forceinline__ float warp_max(float v) {
  for (int offset = 16; offset > 0; offset /= 2) {
    v = fmaxf(v, __shfl_xor_sync(kFullWarpMask, v, offset));
  }
  return v;
}

/// \brief Sum over the block; every thread gets the result.
/// \param v       this thread's value
/// \param scratch (32) shared floats, free for the duration of the call
__device__ __forceinline__ float block_sum(float v, float* scratch) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, n_warps = blockDim.x / 32;
  v = warp_sum(v);
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  // Every warp reduces the per-warp partials itself: no second broadcast step needed.
  v = warp_sum(lane < n_warps ? scratch[lane] : 0.0f);
  __syncthreads();  // scratch may be reused as soon as this returns
  return v;
}

/// \brief Max over the block; every thread gets the result.
/// \param v       this thread's value
/// \param scratch (32) shared floats, free for the duration of the call
__device__ __forceinline__ float block_max(float v, float* scratch) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, n_warps = blockDim.x / 32;
  v = warp_max(v);
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = warp_max(lane < n_warps ? scratch[lane] : -INFINITY);
  __syncthreads();
  return v;
}

}  // namespace nanoserve
