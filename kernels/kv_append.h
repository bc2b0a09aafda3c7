#pragma once
/// \file
/// \brief KV append: write the keys and values of newly computed positions (activations in A)
/// into a KV cache in the storage type, one cache row ("slot") per token.
///
/// A slot is the flat row index of the cache viewed as `(num_slots, kv_dim)` with
/// `kv_dim = n_kv_heads * head_dim`. The caller computes it, which lets one kernel serve every
/// cache layout of the project (vLLM's `reshape_and_cache` does the same):
///
///     contiguous cache, one layer   (batch, max_seq_len, n_kv_heads, head_dim)
///                                   slot = seq * max_seq_len + position
///     paged cache (chapter 2)       (num_blocks, block_size, n_kv_heads, head_dim)
///                                   slot = block_id * block_size + offset
///
/// For the chapter-1 cache `(layer, max_seq_len, n_kv_heads, head_dim)` pass the layer's base
/// pointer and slot = position.

#include <cstdint>

#include "kernels/cuda_compat.h"
#include "kernels/dtype.cuh"

namespace nanoserve {

/// \brief `k_cache[slots[r]] = T(k[r])`, `v_cache[slots[r]] = T(v[r])` for every row r, on
/// `stream` (each value rounded once, to nearest even).
///
/// Slots are device data, so the kernel cannot throw: a row whose slot is outside
/// `[0, num_slots)` writes nothing. Slot -1 is the conventional "no slot" of a padding token.
/// \tparam T storage type of the cache: float, __half or __nv_bfloat16
/// \tparam A storage type of the activations k and v: float, __half or __nv_bfloat16
/// \param k         (rows, kv_dim) keys, RoPE already applied
/// \param v         (rows, kv_dim) values
/// \param slots     (rows) destination cache row of each input row, device memory
/// \param rows      number of rows (0 launches nothing)
/// \param kv_dim    n_kv_heads * head_dim (>= 1)
/// \param k_cache   (num_slots, kv_dim) key cache, updated
/// \param v_cache   (num_slots, kv_dim) value cache, updated
/// \param num_slots rows of each cache (>= 0)
/// \param stream    CUDA stream
/// \throws std::invalid_argument for negative sizes or kv_dim < 1
template <typename T, typename A = float>
void launch_kv_append(const nondeduced_t<A>* k, const nondeduced_t<A>* v, const int* slots,
                      int rows, int kv_dim,
                      T* k_cache, T* v_cache, std::int64_t num_slots, cudaStream_t stream);

}  // namespace nanoserve
