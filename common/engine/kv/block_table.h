#pragma once
/// \file
/// \brief `BlockTable`: one sequence's map from logical blocks to physical KV blocks, and the
/// slot mapping the paged kernels use.
///
/// Like an OS page table: token position p lives in logical block p / block_size at offset
/// p % block_size, and the table names the physical block behind each logical one. With
/// block_size 4:
///
///     positions     0 1 2 3 | 4 5 6 7 | 8 9
///     logical block    0    |    1    |  2       (the last one partially filled)
///     block_ids       [ 7   ,    2    ,  5 ]
///     slot(9) = block_ids[9 / 4] * 4 + 9 % 4 = 5 * 4 + 1 = 21
///
/// A slot is a row of the device KV pool viewed as (num_blocks * block_size, ...): the paged
/// KV write scatters token p's K and V to row slot(p), and PagedAttention gathers them back
/// through the same table. Only the `KVCacheManager` modifies tables.

#include <cstdint>
#include <vector>

namespace nanoserve::engine {

/// \brief Physical block ids of one sequence and how many token slots they cover.
///
/// \par Example
/// \snippet tests/ch02/test_examples_kv.cpp BlockTable
class BlockTable {
 public:
  /// \brief An empty table for blocks of `block_size` tokens.
  explicit BlockTable(int block_size) : block_size_(block_size) {}

  /// \brief Physical block ids, logical block 0 first.
  const std::vector<int>& block_ids() const { return block_ids_; }
  /// \brief Tokens with a reserved KV slot: positions [0, num_tokens()).
  int num_tokens() const { return num_tokens_; }
  /// \brief Number of blocks, ceil(num_tokens / block_size).
  int num_blocks() const { return static_cast<int>(block_ids_.size()); }
  /// \brief Tokens per block.
  int block_size() const { return block_size_; }
  /// \brief Slots at the end reserved for draft tokens not verified yet (speculative decoding
  /// in the scheduler, `KVCacheManager::append_slots` with drafts); 0 between steps.
  int num_draft_slots() const { return num_draft_slots_; }

  /// \brief `block_ids[pos / block_size] * block_size + pos % block_size`. Throws
  /// `InvalidArgument` unless 0 <= pos < num_tokens().
  int64_t slot(int pos) const;
  /// \brief (end - begin) slots of positions [begin, end), for a paged KV write. Throws
  /// `InvalidArgument` unless 0 <= begin <= end <= num_tokens().
  std::vector<int64_t> slot_mapping(int begin, int end) const;

 private:
  friend class KVCacheManager;
  int block_size_;
  int num_tokens_ = 0;
  int num_draft_slots_ = 0;
  std::vector<int> block_ids_;
};

}  // namespace nanoserve::engine
