#pragma once
// A deliberately simple model of BlockPool + KVCacheManager for the property test: the free
// queue is a vector scanned linearly, the prefix cache a list in caching order, and a cached
// block is identified by the WHOLE token prefix it ends (compared element by element) instead
// of hashes and chain ids. The policies are the documented ones: LRU head allocation,
// reverse-order frees, hits taken before new blocks, one-block-short lookups, copy before
// writing into a shared or cached block, all-or-nothing operations.

#include <algorithm>
#include <cstdint>
#include <map>
#include <vector>

#include "common/engine/kv/kv_cache_block.h"

namespace nanoserve::testing {

class ReferenceKV {
 public:
  struct Block {
    int ref = 0;
    bool cached = false;
    std::vector<int> prefix;  // every token from the sequence start to this block's end
  };
  struct Table {
    std::vector<int> blocks;
    int num_tokens = 0;
  };

  ReferenceKV(int num_blocks, int block_size, bool enable_caching)
      : bs(block_size), caching(enable_caching), blocks(size_t(num_blocks)) {
    for (int i = 0; i < num_blocks; ++i) free_list.push_back(i);
  }

  int bs;
  bool caching;
  std::vector<Block> blocks;
  std::vector<int> free_list;    // head (next to allocate) first
  std::vector<int> cache_order;  // cached blocks, oldest first
  std::map<int64_t, Table> tables;
  long long queries = 0, hits = 0, computed = 0, skipped = 0, copies = 0, evictions = 0;

  std::vector<int> lookup(const std::vector<int>& tokens) const {
    std::vector<int> found;
    if (!caching || tokens.empty()) return found;
    for (int i = 0; i < (int(tokens.size()) - 1) / bs; ++i) {
      const std::vector<int> prefix(tokens.begin(), tokens.begin() + (i + 1) * bs);
      auto it = std::find_if(cache_order.begin(), cache_order.end(),
                             [&](int id) { return blocks[size_t(id)].prefix == prefix; });
      if (it == cache_order.end()) break;
      found.push_back(*it);
    }
    return found;
  }

  // Returns false (changing nothing) when blocks run out; `n` = -1 means all the rest.
  bool allocate(int64_t id, const std::vector<int>& tokens, int n, int* cached_tokens) {
    const std::vector<int> found = lookup(tokens);
    const int cached = int(found.size()) * bs;
    if (n == -1) n = int(tokens.size()) - cached;
    const int total = cached + n;
    int needed = (total + bs - 1) / bs - int(found.size());
    for (int b : found) needed += blocks[size_t(b)].ref == 0;
    if (needed > int(free_list.size())) return false;
    Table table;
    for (int b : found) touch(b);
    table.blocks = found;
    while (int(table.blocks.size()) * bs < total) table.blocks.push_back(pop());
    table.num_tokens = total;
    cache_full(table, tokens, int(found.size()));
    if (caching) queries += (int(tokens.size()) - 1) / bs;
    hits += long(found.size());
    skipped += cached;
    computed += int(tokens.size()) - cached;
    tables[id] = table;
    *cached_tokens = cached;
    return true;
  }

  bool append(int64_t id, const std::vector<int>& tokens, int n, std::vector<engine::BlockCopy>* out) {
    Table& t = tables.at(id);
    const bool partial = n > 0 && t.num_tokens % bs != 0;
    const bool copy = partial && (blocks[size_t(t.blocks.back())].ref > 1 ||
                                  blocks[size_t(t.blocks.back())].cached);
    const int grow = (t.num_tokens + n + bs - 1) / bs - int(t.blocks.size());
    if (grow + int(copy) > int(free_list.size())) return false;
    std::vector<int> fresh;
    for (int i = 0; i < grow + int(copy); ++i) fresh.push_back(pop());
    size_t next = 0;
    if (copy) {
      out->push_back({t.blocks.back(), fresh[0]});
      release(t.blocks.back());
      t.blocks.back() = fresh[next++];
      ++copies;
    }
    for (; next < fresh.size(); ++next) t.blocks.push_back(fresh[next]);
    const int full_before = t.num_tokens / bs;
    t.num_tokens += n;
    cache_full(t, tokens, full_before);
    return true;
  }

  void fork(int64_t parent, int64_t child) {
    tables[child] = tables.at(parent);
    for (int b : tables[child].blocks) touch(b);
  }

  void rollback(int64_t id, int n) {
    Table& t = tables.at(id);
    t.num_tokens -= n;
    while (int(t.blocks.size()) > (t.num_tokens + bs - 1) / bs) {
      release(t.blocks.back());
      t.blocks.pop_back();
    }
  }

  void free(int64_t id) {
    Table& t = tables.at(id);
    for (auto it = t.blocks.rbegin(); it != t.blocks.rend(); ++it) release(*it);
    tables.erase(id);
  }

 private:
  int pop() {
    const int id = free_list.front();
    free_list.erase(free_list.begin());
    Block& b = blocks[size_t(id)];
    if (b.cached) {
      cache_order.erase(std::find(cache_order.begin(), cache_order.end(), id));
      b.cached = false;
      b.prefix.clear();
      ++evictions;
    }
    b.ref = 1;
    return id;
  }
  void touch(int id) {
    if (blocks[size_t(id)].ref++ == 0) {
      free_list.erase(std::find(free_list.begin(), free_list.end(), id));
    }
  }
  void release(int id) {
    if (--blocks[size_t(id)].ref == 0) free_list.push_back(id);
  }
  void cache_full(const Table& t, const std::vector<int>& tokens, int first) {
    if (!caching) return;
    for (int i = first; i < t.num_tokens / bs; ++i) {
      Block& b = blocks[size_t(t.blocks[size_t(i)])];
      b.cached = true;
      b.prefix.assign(tokens.begin(), tokens.begin() + (i + 1) * bs);
      cache_order.push_back(t.blocks[size_t(i)]);
    }
  }
};

}  // namespace nanoserve::testing
