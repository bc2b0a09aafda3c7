#pragma once
/// \file
/// \brief `HostKVPool`: pinned host memory that swapped-out KV blocks wait in (swap
/// preemption, chapter 7; vLLM v0's CPU cache of the `CacheEngine`). Same block layout as the
/// device's `PagedKVCache`, so a swap is a whole-block copy per layer, K and V:
///
///     device  K (n_layers, num_blocks, block_size, kv_dim)   host  (n_layers, K|V, num_host_blocks, block)
///             V (same)                                swap_out ──► cudaMemcpyAsync per layer
///                                                     swap_in  ◄── (pinned: DMA, no staging)
///
/// The host side reads only the scheduler's plan (`SchedulerOutput::blocks_to_swap_out/_in`,
/// pairs of block ids); which host block belongs to whom is the block manager's business
/// (`HostBlockPool`). Copies are queued on the pass's stream before the pass, so they are
/// ordered before anything that reuses a swapped-out device block.

#include <cstdint>
#include <memory>
#include <vector>

#include "common/engine/kv/kv_cache_block.h"
#include "common/engine/model/paged_kv_cache.h"

namespace nanoserve::engine {

/// \brief `num_blocks` host blocks shaped like `cache`'s, in pinned memory.
///
/// \par Example
/// \snippet tests/ch07/test_examples_stack.cpp HostKVPool
class HostKVPool {
 public:
  /// \brief Pinned memory for `num_blocks` blocks of `cache`'s layout (all layers, K and V).
  /// Throws `InvalidArgument` for `num_blocks` < 1, `CudaError` when host memory runs out.
  HostKVPool(const PagedKVCache& cache, int num_blocks);

  /// \brief Copies device block → host block for each pair, on `stream`. Throws
  /// `InvalidArgument` (before any copy) for a block outside either pool.
  void swap_out(PagedKVCache& cache, const std::vector<BlockSwap>& pairs, cudaStream_t stream);
  /// \brief Copies host block → device block for each pair, on `stream`. Same errors.
  void swap_in(PagedKVCache& cache, const std::vector<BlockSwap>& pairs, cudaStream_t stream);

  /// \brief Host blocks.
  int num_blocks() const { return num_blocks_; }
  /// \brief Pinned bytes.
  std::int64_t bytes() const;

 private:
  struct PinnedFree {
    void operator()(unsigned char* p) const;
  };
  void check(const PagedKVCache& cache, const std::vector<BlockSwap>& pairs) const;
  unsigned char* host_block(int layer, bool values, int block) const;
  void copy(PagedKVCache& cache, const std::vector<BlockSwap>& pairs, bool to_host,
            cudaStream_t stream);

  int n_layers_;
  int num_blocks_;
  std::int64_t block_bytes_;
  std::unique_ptr<unsigned char[], PinnedFree> data_;  // (n_layers, 2, num_blocks, block_bytes)
};

}  // namespace nanoserve::engine
