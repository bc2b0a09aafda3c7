// Copy-on-write of paged KV blocks: pool[l][dst] = pool[l][src] for each (src, dst) pair,
// every layer l, K and V.
//
// Versions:
//   v01  one thread block per (pair, layer, K or V), threads stride over the block's bytes in
//        the widest word (16, 8, 4 or 2 bytes) that divides the block size and the pools'
//        alignment. A block of 16 tokens x 8 KV heads x 128 fp16 values is 32 KiB, so each
//        thread block moves a sizeable contiguous span; copies are rare (the first write into a
//        shared partial block), so one launch per step is all that matters.
#include <cstdint>
#include <string>

#include "kernels/block_copy.h"
#include "kernels/dtype.cuh"
#include "kernels/kernel_args.h"

namespace nanoserve {
namespace {

// ---------------------------------------------------------------------------------------------
// v01

// k_cache, v_cache (num_layers, num_blocks, block_words) in words W, pairs (num_pairs, 2);
// grid (num_pairs, num_layers, 2), block (256)
template <typename W>
__global__ void block_copy_kernel_v01(W* __restrict__ k_cache, W* __restrict__ v_cache,
                                      const int* __restrict__ pairs, int num_blocks,
                                      std::int64_t block_words) {
  const int pair = blockIdx.x, layer = blockIdx.y;
  const int src = pairs[2 * pair], dst = pairs[2 * pair + 1];
  if (src < 0 || src >= num_blocks || dst < 0 || dst >= num_blocks) return;  // bad pair
  W* pool = (blockIdx.z == 0 ? k_cache : v_cache) +
            static_cast<std::int64_t>(layer) * num_blocks * block_words;  // (num_blocks, words)
  const W* from = pool + src * block_words;                               // (block_words)
  W* to = pool + dst * block_words;                                       // (block_words)
  for (std::int64_t i = threadIdx.x; i < block_words; i += blockDim.x) to[i] = from[i];
}

template <typename W>
void launch_v01(void* k_cache, void* v_cache, int num_layers, int num_blocks,
                std::int64_t block_bytes, const int* pairs, int num_pairs, cudaStream_t stream) {
  launch(block_copy_kernel_v01<W>, dim3(num_pairs, num_layers, 2), dim3(256), 0, stream,
         static_cast<W*>(k_cache), static_cast<W*>(v_cache), pairs, num_blocks,
         block_bytes / static_cast<std::int64_t>(sizeof(W)));
}

// Whether words of `bytes` bytes tile the blocks and the pools start on such a boundary.
bool fits_word(const void* k, const void* v, std::int64_t block_bytes, std::int64_t bytes) {
  return block_bytes % bytes == 0 && reinterpret_cast<std::uintptr_t>(k) % bytes == 0 &&
         reinterpret_cast<std::uintptr_t>(v) % bytes == 0;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// launchers

template <typename T>
void launch_block_copy(T* k_cache, T* v_cache, int num_layers, int num_blocks, int block_size,
                       int kv_dim, const int* pairs, int num_pairs, cudaStream_t stream) {
  constexpr const char* kOp = "launch_block_copy";
  kargs::require(
      num_layers >= 1 && num_layers <= 65535, kOp,
      "num_layers = " + std::to_string(num_layers) + " must be in [1, 65535] (a grid y dimension)");
  kargs::require_at_least(kOp, "num_blocks", num_blocks, 1);
  kargs::require_at_least(kOp, "block_size", block_size, 1);
  kargs::require_at_least(kOp, "kv_dim", kv_dim, 1);
  kargs::require_at_least(kOp, "num_pairs", num_pairs, 0);
  if (num_pairs == 0) return;
  const std::int64_t block_bytes =
      std::int64_t{block_size} * kv_dim * static_cast<std::int64_t>(sizeof(T));
  if (fits_word(k_cache, v_cache, block_bytes, 16)) {
    launch_v01<uint4>(k_cache, v_cache, num_layers, num_blocks, block_bytes, pairs, num_pairs,
                      stream);
  } else if (fits_word(k_cache, v_cache, block_bytes, 8)) {
    launch_v01<uint2>(k_cache, v_cache, num_layers, num_blocks, block_bytes, pairs, num_pairs,
                      stream);
  } else if (fits_word(k_cache, v_cache, block_bytes, 4)) {
    launch_v01<unsigned>(k_cache, v_cache, num_layers, num_blocks, block_bytes, pairs, num_pairs,
                         stream);
  } else {  // 2-byte storage types always divide into 2-byte words
    launch_v01<unsigned short>(k_cache, v_cache, num_layers, num_blocks, block_bytes, pairs,
                               num_pairs, stream);
  }
}

template void launch_block_copy<float>(float*, float*, int, int, int, int, const int*, int,
                                       cudaStream_t);
template void launch_block_copy<__half>(__half*, __half*, int, int, int, int, const int*, int,
                                        cudaStream_t);
template void launch_block_copy<__nv_bfloat16>(__nv_bfloat16*, __nv_bfloat16*, int, int, int, int,
                                               const int*, int, cudaStream_t);

}  // namespace nanoserve
