#pragma once
/// \file
/// \brief `HostBlockPool`: the host's share of the KV memory — block ids of a pinned host pool
/// that preempted sequences are swapped out to (chapter 7; vLLM v0's CPU block allocator).
///
///     device pool (BlockPool)          host pool (HostBlockPool)
///     [b0][b1][b2][b3][b4][b5]   swap_out ──►  [h0][h1][h2][h3]     same block layout
///                                ◄── swap_in  (ref counts: samples of one request that
///                                              shared a device block share its host copy)
///
/// Only ids and reference counts live here; the bytes are the executor's
/// (`HostKVPool`, engine/model/host_kv_pool.h). No prefix cache: a host block is free as soon
/// as its last holder is swapped back in or finishes.

#include <string>
#include <vector>

namespace nanoserve::engine {

/// \brief Reference-counted host block ids, handed out lowest id first.
///
/// \par Example
/// \snippet tests/ch07/test_examples_stack.cpp HostBlockPool
class HostBlockPool {
 public:
  /// \brief `num_blocks` free blocks (0: no host pool, nothing can be swapped). Throws
  /// `InvalidArgument` for a negative count or more than 2^24.
  explicit HostBlockPool(int num_blocks);
  /// \brief Blocks in the pool.
  int num_blocks() const { return static_cast<int>(ref_cnt_.size()); }
  /// \brief Blocks with no holder.
  int num_free_blocks() const { return static_cast<int>(free_.size()); }
  /// \brief Holders of block `id` (0: free).
  int ref_cnt(int id) const { return ref_cnt_.at(std::size_t(id)); }
  /// \brief A free block with one holder. Throws `std::logic_error` when none is free (callers
  /// check `num_free_blocks` first).
  int allocate();
  /// \brief One more holder of block `id` (an in-use block).
  void touch(int id);
  /// \brief One holder fewer; the block is free again at 0. Throws `std::logic_error` on a
  /// free block (a double free).
  void free(int id);
  /// \brief The first broken invariant (free list = the blocks with no holder, no negative
  /// count), or an empty string.
  std::string check_invariants() const;

 private:
  std::vector<int> ref_cnt_;  ///< (num_blocks)
  std::vector<int> free_;     ///< free ids, sorted descending: the lowest is popped first
};

}  // namespace nanoserve::engine
