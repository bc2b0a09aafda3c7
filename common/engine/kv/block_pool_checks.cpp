// BlockPool::check_invariants: the pool's consistency conditions, checked by every chapter-2
// test after its last step (and by the property test after every step).
#include <algorithm>
#include <map>
#include <utility>

#include "common/engine/kv/block_pool.h"

namespace nanoserve::engine {

std::string BlockPool::check_invariants() const {
  if (std::string links = free_queue_.check_links(); !links.empty()) return links;
  int num_zero = 0;
  int num_cached = 0;
  for (const KVCacheBlock& b : blocks_) {
    const std::string name = "block " + std::to_string(b.block_id);
    if (b.ref_cnt < 0) return name + " has ref_cnt " + std::to_string(b.ref_cnt);
    // Free ⇔ in the queue: a block out of the queue with ref_cnt 0 is leaked, a block in the
    // queue with ref_cnt > 0 could be handed to a second owner.
    if ((b.ref_cnt == 0) != FreeBlockQueue::is_linked(b)) {
      return name + " has ref_cnt " + std::to_string(b.ref_cnt) +
             (b.ref_cnt == 0 ? " but is not in the free queue (leaked)"
                             : " but is in the free queue");
    }
    num_zero += b.ref_cnt == 0;
    if (!b.cached) {
      if (!b.token_ids.empty()) return name + " is not cached but keeps token ids";
      continue;
    }
    ++num_cached;
    if (!prefix_caching_) return name + " is cached but prefix caching is off";
    if (static_cast<int>(b.token_ids.size()) != block_size_) {
      return name + " is cached with " + std::to_string(b.token_ids.size()) + " tokens";
    }
    // A parent is always cached before its child, so its chain id is older.
    if (b.chain_id == kRootChainId || b.parent_chain_id >= b.chain_id) {
      return name + " has chain id " + std::to_string(b.chain_id) + " and parent chain id " +
             std::to_string(b.parent_chain_id);
    }
    auto bucket = cached_.find(b.hash);
    const long long entries =
        bucket == cached_.end() ? 0 : std::count(bucket->second.begin(), bucket->second.end(), &b);
    if (entries != 1) {
      return name + " is cached but appears " + std::to_string(entries) +
             " times under its hash";
    }
  }
  if (num_zero != free_queue_.size()) {
    return std::to_string(num_zero) + " blocks have ref_cnt 0 but the free queue holds " +
           std::to_string(free_queue_.size());
  }
  if (num_cached != num_cached_) {
    return std::to_string(num_cached) + " blocks are cached but the pool counts " +
           std::to_string(num_cached_);
  }
  // Every map entry is a cached block filed under its own hash; the same chain (parent chain
  // id + tokens) always carries the same chain id, and different chains different ones.
  std::map<std::pair<ChainId, std::vector<int>>, ChainId> chain_of;
  std::map<ChainId, std::pair<ChainId, std::vector<int>>> content_of;
  size_t entries = 0;
  for (const auto& [hash, bucket] : cached_) {
    if (bucket.empty()) return "the hash map keeps an empty bucket";
    for (const KVCacheBlock* b : bucket) {
      ++entries;
      if (!b->cached || b->hash != hash) {
        return "the hash map files block " + std::to_string(b->block_id) +
               " under a hash it does not have";
      }
      auto content = std::make_pair(b->parent_chain_id, b->token_ids);
      auto [it, fresh] = chain_of.emplace(content, b->chain_id);
      auto [jt, fresh_id] = content_of.emplace(b->chain_id, content);
      if ((!fresh && it->second != b->chain_id) || (!fresh_id && jt->second != content)) {
        return "block " + std::to_string(b->block_id) + ": chain id " +
               std::to_string(b->chain_id) + " does not name exactly one chain";
      }
    }
  }
  if (static_cast<int>(entries) != num_cached_) return "the hash map has stray entries";
  return "";
}

}  // namespace nanoserve::engine
