#pragma once
/// \file
/// \brief `BlockPool`: every physical KV block, the LRU free queue, and the prefix cache's
/// hash → block index (vLLM v1's `BlockPool`).
///
/// Example with 4 blocks, block size 2 (`[a b]` = a full block holding tokens a, b;
/// `*` = cached; ref = reference count):
///
///     start                 free queue: 0 1 2 3               (all ref 0, nothing cached)
///     get_new_blocks(2)  →  {0, 1}          queue: 2 3        (ref 1 each)
///     cache 0 as [a b]*, 1 as [c d]*        (their KV was written; hashes registered)
///     free_blocks({1, 0})   queue: 2 3 1* 0*                  (tail of the chain first)
///     touch(0) (a hit)      queue: 2 3 1*     block 0 ref 1   (O(1) unlink from the middle)
///     get_new_blocks(3)  →  {2, 3, 1}    block 1 evicted: its hash entry is removed first
///
/// The pool is policy-free about sequences: it never looks at block tables. `KVCacheManager`
/// builds allocation, prefix lookup, copy-on-write and rollback on top of it.

#include <string>
#include <unordered_map>
#include <vector>

#include "common/engine/kv/block_hash.h"
#include "common/engine/kv/free_block_queue.h"
#include "common/engine/kv/kv_cache_block.h"
#include "common/error.h"

namespace nanoserve::engine {

/// \brief Not enough free KV blocks for a request. Recoverable: the call that throws it has
/// changed nothing, so a scheduler can preempt another sequence and retry.
///
/// \par Example
/// \snippet tests/ch02/test_examples_kv.cpp BlockPoolExhausted
class BlockPoolExhausted : public Error {
 public:
  /// \brief `what_for` names the operation and sequence, e.g. "allocate(seq 7)".
  BlockPoolExhausted(const std::string& what_for, int needed, int available, int num_blocks)
      : Error("KV cache: " + what_for + " needs " + std::to_string(needed) +
              " free blocks but only " + std::to_string(available) + " of " +
              std::to_string(num_blocks) + " are free"),
        needed_(needed),
        available_(available) {}
  /// \brief Free blocks the operation needed.
  int needed() const { return needed_; }
  /// \brief Free blocks there were.
  int available() const { return available_; }

 private:
  int needed_;
  int available_;
};

/// \brief Owns the `KVCacheBlock` records of a KV pool of `num_blocks` blocks, hands out free
/// blocks in LRU order, and indexes cached full blocks by hash.
///
/// \par Example
/// \snippet tests/ch02/test_examples_kv.cpp BlockPool
class BlockPool {
 public:
  /// \brief All blocks start free, uncached, in id order. Throws `InvalidArgument` unless
  /// 1 <= num_blocks <= 2^24 and 1 <= block_size <= 4096.
  /// \param num_blocks            physical blocks in the device KV pool
  /// \param block_size            tokens per block
  /// \param enable_prefix_caching hash full blocks and keep them for reuse
  /// \param hash_fn               the block hash (tests inject a weak one to force collisions)
  BlockPool(int num_blocks, int block_size, bool enable_prefix_caching,
            BlockHashFn hash_fn = &xxh3_block_hash);

  /// \brief Total number of blocks.
  int num_blocks() const { return static_cast<int>(blocks_.size()); }
  /// \brief Tokens per block.
  int block_size() const { return block_size_; }
  /// \brief Whether full blocks are hashed and kept for reuse.
  bool prefix_caching() const { return prefix_caching_; }
  /// \brief Blocks with ref_cnt 0 (in the free queue, cached or not).
  int num_free_blocks() const { return free_queue_.size(); }
  /// \brief Blocks with ref_cnt > 0.
  int num_used_blocks() const { return num_blocks() - num_free_blocks(); }
  /// \brief Blocks in the prefix cache (in use or free).
  int num_cached_blocks() const { return num_cached_; }
  /// \brief Cached blocks evicted so far (popped from the free queue while cached).
  long long num_evictions() const { return num_evictions_; }
  /// \brief The record of one block. Throws `InvalidArgument` for an id outside the pool.
  const KVCacheBlock& block(int block_id) const;
  /// \brief Free block ids in eviction order (head first).
  std::vector<int> free_queue_ids() const { return free_queue_.block_ids(); }

  /// \brief Pops `n` blocks from the head of the free queue, evicting any that are cached
  /// (their hash entry is removed before reuse), and gives each ref_cnt 1. Throws
  /// `BlockPoolExhausted` (changing nothing) when fewer than `n` blocks are free.
  std::vector<int> get_new_blocks(int n);
  /// \brief One more reference to a block (a prefix-cache hit or a fork); a free block leaves
  /// the free queue in O(1).
  void touch(int block_id);
  /// \brief Drops one reference per id, in the given order; blocks reaching ref_cnt 0 are
  /// appended to the free queue in that order (cached ones stay cached). Callers pass a
  /// sequence's blocks in reverse so that a chain's tail is evicted before its head. Throws
  /// `std::logic_error` on a block whose ref_cnt is already 0 (a double free).
  void free_blocks(const std::vector<int>& ordered_block_ids);

  /// \brief The chained hash of a full block: `hash_fn(parent_hash, token_ids[0..block_size))`.
  BlockHash hash_block(BlockHash parent_hash, const int* token_ids) const {
    return hash_fn_(parent_hash, token_ids, block_size_);
  }
  /// \brief The cached block holding exactly the chain `parent_chain_id` + `token_ids`
  /// (block_size tokens), found through `hash`; -1 when there is none. Candidates with the
  /// same hash are tried in the order they were cached; a candidate matches only if its
  /// parent chain id and all its tokens are equal, so hash collisions never produce a hit.
  int find_cached_block(BlockHash hash, ChainId parent_chain_id, const int* token_ids) const;
  /// \brief Puts a full, in-use block into the prefix cache. Its chain id is that of an
  /// already cached block with the same chain (a duplicate), or a fresh one. Throws
  /// `std::logic_error` if the block is free or already cached, or prefix caching is off.
  void cache_full_block(int block_id, BlockHash hash, ChainId parent_chain_id,
                        const int* token_ids);

  /// \brief Checks every invariant of the pool and returns a description of the first one
  /// broken, or an empty string. Invariants: the queue's links are consistent and it holds
  /// exactly the blocks with ref_cnt 0; no ref_cnt is negative; every hash-map entry points to
  /// a cached block with that hash, and every cached block is in the map once; cached blocks
  /// have block_size tokens, a chain id newer than their parent's, and equal chains share one
  /// chain id; nothing is cached when prefix caching is off.
  std::string check_invariants() const;

 private:
  KVCacheBlock& mutable_block(int block_id, const char* caller);
  void evict(KVCacheBlock& block);

  int block_size_;
  bool prefix_caching_;
  BlockHashFn hash_fn_;
  std::vector<KVCacheBlock> blocks_;  ///< (num_blocks); never resized, so pointers stay valid
  FreeBlockQueue free_queue_;
  /// Cached blocks by hash. A bucket holds more than one block only for duplicates (the same
  /// chain computed twice) or hash collisions, so it is almost always of size 1.
  std::unordered_map<BlockHash, std::vector<KVCacheBlock*>> cached_;
  int num_cached_ = 0;
  ChainId next_chain_id_ = kRootChainId + 1;
  long long num_evictions_ = 0;
};

}  // namespace nanoserve::engine
