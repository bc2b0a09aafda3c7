// KVCacheManager::metrics and check_invariants: the views that tests and reports take of the
// manager, kept apart from the allocation logic.
#include <algorithm>

#include "common/engine/kv/kv_cache_manager.h"

namespace nanoserve::engine {

KVCacheMetrics KVCacheManager::metrics() const {
  KVCacheMetrics m = counters_;
  m.evictions = pool_.num_evictions();
  m.blocks_in_use = pool_.num_used_blocks();
  m.blocks_free = pool_.num_free_blocks();
  m.blocks_cached = pool_.num_cached_blocks();
  m.host_blocks_in_use = host_.num_blocks() - host_.num_free_blocks();
  m.allocated_slots = (long long)m.blocks_in_use * block_size();
  // A shared block is filled as far as its fullest user has written it; count it once.
  std::vector<int> filled(size_t(pool_.num_blocks()), 0);
  for (const auto& entry : tables_) {
    const BlockTable& table = entry.second;
    for (int i = 0; i < table.num_blocks(); ++i) {
      int& f = filled[size_t(table.block_ids_[size_t(i)])];
      f = std::max(f, std::min(block_size(), table.num_tokens_ - i * block_size()));
    }
  }
  for (int f : filled) m.used_slots += f;
  return m;
}

std::string KVCacheManager::check_invariants() const {
  if (std::string pool = pool_.check_invariants(); !pool.empty()) return pool;
  const int bs = block_size();
  std::vector<int> holders(size_t(pool_.num_blocks()), 0);
  for (const auto& [seq_id, table] : tables_) {
    const std::string name = "sequence " + std::to_string(seq_id);
    if (table.num_blocks() != (table.num_tokens_ + bs - 1) / bs) {
      return name + " has " + std::to_string(table.num_blocks()) + " blocks for " +
             std::to_string(table.num_tokens_) + " slots";
    }
    for (int i = 0; i < table.num_blocks(); ++i) {
      const int id = table.block_ids_[size_t(i)];
      if (id < 0 || id >= pool_.num_blocks()) return name + " holds block id " + std::to_string(id);
      ++holders[size_t(id)];
      // Blocks holding a draft slot are cached only once the drafts are verified.
      const bool full = (i + 1) * bs <= table.num_tokens_ - table.num_draft_slots_;
      if (!pool_.prefix_caching() || !full) continue;
      const KVCacheBlock& b = pool_.block(id);
      const ChainId parent =
          i == 0 ? kRootChainId : pool_.block(table.block_ids_[size_t(i) - 1]).chain_id;
      if (!b.cached || b.parent_chain_id != parent) {
        return name + ": full block " + std::to_string(i) + " (block " + std::to_string(id) +
               ") is " + (b.cached ? "cached under another parent" : "not cached");
      }
    }
  }
  // The host pool: each block held by as many swapped-out tables as its count says.
  if (std::string host = host_.check_invariants(); !host.empty()) return host;
  std::vector<int> host_holders(size_t(host_.num_blocks()), 0);
  for (const auto& [seq_id, table] : swapped_) {
    if (tables_.count(seq_id) != 0) {
      return "sequence " + std::to_string(seq_id) + " is both on the device and swapped out";
    }
    for (int h : table.block_ids_) {
      if (h < 0 || h >= host_.num_blocks()) return "sequence " + std::to_string(seq_id) + " holds host block " + std::to_string(h);
      ++host_holders[size_t(h)];
    }
  }
  for (int h = 0; h < host_.num_blocks(); ++h) {
    if (host_.ref_cnt(h) != host_holders[size_t(h)]) {
      return "host block " + std::to_string(h) + " has ref_cnt " + std::to_string(host_.ref_cnt(h)) +
             " but " + std::to_string(host_holders[size_t(h)]) + " swapped tables hold it";
    }
  }
  for (int id = 0; id < pool_.num_blocks(); ++id) {
    if (pool_.block(id).ref_cnt != holders[size_t(id)]) {
      return "block " + std::to_string(id) + " has ref_cnt " +
             std::to_string(pool_.block(id).ref_cnt) + " but " +
             std::to_string(holders[size_t(id)]) + " tables hold it";
    }
  }
  return "";
}

}  // namespace nanoserve::engine
