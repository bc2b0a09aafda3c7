#pragma once
// Helpers shared by the chapter-2 KV cache tests.

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "common/engine/kv/block_hash.h"
#include "common/engine/kv/kv_cache_manager.h"
#include "common/engine/kv/sequence.h"

namespace nanoserve::testing {

/// A sequence with the given id and tokens.
inline engine::Sequence make_seq(int64_t id, std::vector<int> tokens) {
  engine::Sequence seq;
  seq.seq_id = id;
  seq.token_ids = std::move(tokens);
  return seq;
}

/// Tokens first, first+1, …, first+n-1.
inline std::vector<int> iota_tokens(int first, int n) {
  std::vector<int> tokens(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) tokens[static_cast<size_t>(i)] = first + i;
  return tokens;
}

/// `a` followed by `b`.
inline std::vector<int> concat(std::vector<int> a, const std::vector<int>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

/// Reference counts of all blocks, in id order.
inline std::vector<int> ref_counts(const engine::BlockPool& pool) {
  std::vector<int> refs;
  for (int id = 0; id < pool.num_blocks(); ++id) refs.push_back(pool.block(id).ref_cnt);
  return refs;
}

/// A hash that puts every block in one bucket: any two blocks collide.
inline engine::BlockHash constant_hash(engine::BlockHash, const int*, int) { return 42; }

/// A weak hash with few values (the token sum mod 3, parent ignored): different chains
/// collide often, so lookups must rely on token and chain-id comparisons.
inline engine::BlockHash weak_hash(engine::BlockHash, const int* tokens, int count) {
  unsigned sum = 0;
  for (int i = 0; i < count; ++i) sum += static_cast<unsigned>(tokens[i]);
  return sum % 3;
}

}  // namespace nanoserve::testing

/// Every test ends with this: no leaked or double-freed block, consistent links and cache.
#define EXPECT_KV_INVARIANTS(manager_or_pool) EXPECT_EQ((manager_or_pool).check_invariants(), "")
