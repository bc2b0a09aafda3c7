#pragma once
/// \file
/// \brief `FreeBlockQueue`: the LRU list of free KV blocks, an intrusive doubly linked list
/// (vLLM's `FreeKVCacheBlockQueue`).
///
/// The links live inside the `KVCacheBlock`s themselves (`prev_free`, `next_free`), so every
/// operation is O(1) and allocates nothing — in particular `remove`, which a prefix-cache hit
/// on a free block needs (a `std::deque` or `std::list` of ids would need a search or a side
/// index). Two sentinel nodes make the empty list and the ends need no special cases:
///
///        head sentinel                                              tail sentinel
///     ┌──────────┐  next   ┌────┐  next   ┌────┐  next   ┌────┐  next   ┌──────────┐
///     │ id -1    │────────►│ b3 │────────►│ b0 │────────►│ b7 │────────►│ id -1    │
///     │          │◄────────│    │◄────────│    │◄────────│    │◄────────│          │
///     └──────────┘  prev   └────┘  prev   └────┘  prev   └────┘  prev   └──────────┘
///                          ▲ popleft: least recently freed          ▲ append: just freed
///                          (evicted first)                          (evicted last)
///
/// Order = eviction order: a block freed long ago is reused before one freed recently, so a
/// cached block that was just released stays available for prefix hits as long as possible.

#include <memory>
#include <string>
#include <vector>

#include "common/engine/kv/kv_cache_block.h"

namespace nanoserve::engine {

/// \brief Intrusive doubly linked LRU queue of free `KVCacheBlock`s with O(1) popleft, append
/// and remove-from-the-middle. The queue does not own the blocks; it must outlive none of
/// them (the `BlockPool` owns both).
///
/// \par Example
/// \snippet tests/ch02/test_examples_kv.cpp FreeBlockQueue
class FreeBlockQueue {
 public:
  /// \brief A queue holding `blocks` in the given order (first = next to be popped).
  explicit FreeBlockQueue(const std::vector<KVCacheBlock*>& blocks);

  /// \brief Number of blocks in the queue.
  int size() const { return size_; }
  /// \brief True when no block is free.
  bool empty() const { return size_ == 0; }

  /// \brief Removes and returns the least recently freed block. Throws `std::logic_error`
  /// when empty (callers check `size()` first; an empty pop is a bug, not bad input).
  KVCacheBlock* popleft();
  /// \brief Appends a just-freed block at the tail (most recently freed). The block must not
  /// already be in a queue.
  void append(KVCacheBlock* block);
  /// \brief Unlinks `block`, which must be in this queue, from wherever it is (O(1)).
  void remove(KVCacheBlock* block);

  /// \brief Whether `block` is linked into a queue (both links set).
  static bool is_linked(const KVCacheBlock& block) {
    return block.prev_free != nullptr && block.next_free != nullptr;
  }

  /// \brief Block ids from head to tail (the order `popleft` would return them), for tests
  /// and invariant checks. O(size).
  std::vector<int> block_ids() const;

  /// \brief Walks the links both ways and returns a description of the first inconsistency
  /// (broken prev/next pair, wrong size, cycle), or an empty string when the list is sound.
  std::string check_links() const;

 private:
  // Heap-allocated so that moving the queue (and the pool that holds it) keeps the first and
  // last blocks' links valid.
  std::unique_ptr<KVCacheBlock> head_;  ///< sentinel before the first free block
  std::unique_ptr<KVCacheBlock> tail_;  ///< sentinel after the last free block
  int size_ = 0;
};

}  // namespace nanoserve::engine
