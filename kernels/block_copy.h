#pragma once
/// \file
/// \brief Copy-on-write of paged KV blocks (chapter 2): copies whole blocks `src -> dst` in
/// the K and V pools for a list of (src, dst) pairs, as the `BlockCopy` list that
/// `KVCacheManager` returns asks before the next forward pass (vLLM's `copy_blocks`).
///
/// Pools, K and V alike, layers stacked in one allocation each:
///
///     k_cache, v_cache   (num_layers, num_blocks, block_size, n_kv_heads, head_dim)
///
///     pairs [[3, 9]]:    layer l, block 3  ──copy──►  layer l, block 9   for every l, K and V
///
/// One call copies every layer (base pointers of the stacked pools, `num_layers` = L): one
/// launch per engine step, whatever the depth of the model. When each layer is a separate
/// allocation, call once per layer with that layer's pointers and `num_layers` = 1.

#include <cstdint>

#include "kernels/cuda_compat.h"

namespace nanoserve {

/// \brief For every pair p and layer l: block `pairs[p][1]` of layer l of `k_cache` and of
/// `v_cache` becomes a bit-exact copy of block `pairs[p][0]`, on `stream`.
///
/// Pairs are device data, so the kernel cannot throw: a pair naming a block outside
/// `[0, num_blocks)` copies nothing. The destinations must be distinct and none may be the
/// source of another pair (copies run in parallel, in no defined order); the copy-on-write
/// destinations are freshly allocated blocks, which satisfies both.
/// \tparam T storage type of the pools: float, __half or __nv_bfloat16
/// \param k_cache    (num_layers, num_blocks, block_size, kv_dim) keys, updated
/// \param v_cache    (num_layers, num_blocks, block_size, kv_dim) values, updated
/// \param num_layers layers in the pools, in [1, 65535]
/// \param num_blocks blocks per layer (>= 1)
/// \param block_size tokens per block (>= 1)
/// \param kv_dim     n_kv_heads * head_dim (>= 1)
/// \param pairs      (num_pairs, 2) device int32 (src, dst) block ids
/// \param num_pairs  number of pairs (0 launches nothing)
/// \param stream     CUDA stream
/// \throws std::invalid_argument for sizes out of range
template <typename T>
void launch_block_copy(T* k_cache, T* v_cache, int num_layers, int num_blocks, int block_size,
                       int kv_dim, const int* pairs, int num_pairs, cudaStream_t stream);

}  // namespace nanoserve
