// Hash collisions must never map a request onto another chain's KV (forced with a weak hash).
#include <gtest/gtest.h>

#include <vector>

#include "common/engine/kv/kv_cache_manager.h"
#include "kv_test_support.h"

namespace nanoserve {
namespace {

using testing::constant_hash;
using testing::make_seq;
using V = std::vector<int>;

TEST(Ch02KVCacheCollisions, DifferentPromptsWithEqualHashesNeverShareABlock) {
  engine::KVCacheManager kv(8, 4, true, &constant_hash);  // every block hashes to 42
  const V a = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  const V b = {1, 2, 3, 5, 5, 6, 7, 8, 9};  // differs in one token of the first block
  kv.allocate(make_seq(1, a));
  EXPECT_EQ(kv.allocate(make_seq(2, b)), 0);
  EXPECT_EQ(kv.block_table(1).block_ids(), (V{0, 1, 2}));
  EXPECT_EQ(kv.block_table(2).block_ids(), (V{3, 4, 5}));
  EXPECT_EQ(kv.pool().block(0).hash, kv.pool().block(3).hash);
  EXPECT_EQ(kv.pool().block(1).hash, kv.pool().block(4).hash);
  // Each prompt, asked again, finds its own chain.
  EXPECT_EQ(kv.allocate(make_seq(3, a)), 8);
  EXPECT_EQ(kv.block_table(3).block_ids(), (V{0, 1, 6}));
  EXPECT_EQ(kv.allocate(make_seq(4, b)), 8);
  EXPECT_EQ(kv.block_table(4).block_ids(), (V{3, 4, 7}));
  EXPECT_KV_INVARIANTS(kv);
}

TEST(Ch02KVCacheCollisions, EqualBlocksUnderDifferentParentsAreDifferentChains) {
  engine::KVCacheManager kv(8, 2, true, &constant_hash);
  // The second blocks hold the same tokens [5 6] and collide, but follow different parents:
  // reusing one for the other would attend to the wrong context.
  kv.allocate(make_seq(1, {1, 2, 5, 6, 0}));
  kv.allocate(make_seq(2, {3, 4, 5, 6, 0}));
  EXPECT_EQ(kv.block_table(1).block_ids(), (V{0, 1, 2}));
  EXPECT_EQ(kv.block_table(2).block_ids(), (V{3, 4, 5}));
  EXPECT_NE(kv.pool().block(1).chain_id, kv.pool().block(4).chain_id);
  EXPECT_EQ(kv.num_cached_tokens(make_seq(3, {3, 4, 5, 6, 9})), 4);
  EXPECT_EQ(kv.allocate(make_seq(3, {3, 4, 5, 6, 9})), 4);
  EXPECT_EQ(kv.block_table(3).block_ids(), (V{3, 4, 6}));
  EXPECT_KV_INVARIANTS(kv);
}

TEST(Ch02KVCacheCollisions, ChildOfADuplicateBlockIsFoundThroughTheOriginal) {
  // Chain identity is the chain's content, not a physical block: a block recomputed into a
  // duplicate shares the original's chain id, so what grows after the duplicate is found
  // through the original too.
  engine::KVCacheManager kv(8, 4, true);
  const V x = {1, 2, 3, 4, 5, 6, 7, 8};
  engine::Sequence first = make_seq(1, x);
  kv.allocate(first);                   // blocks 0 [1 2 3 4]*, 1 [5 6 7 8]*
  engine::Sequence again = make_seq(2, x);
  EXPECT_EQ(kv.allocate(again), 4);     // hits 0; recomputes [5 6 7 8] into block 2
  EXPECT_EQ(kv.block_table(2).block_ids(), (V{0, 2}));
  EXPECT_EQ(kv.pool().block(2).chain_id, kv.pool().block(1).chain_id);
  again.token_ids = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  kv.append_slots(again, 4);            // block 3 [9 10 11 12]*, child of block 2
  EXPECT_EQ(kv.block_table(2).block_ids(), (V{0, 2, 3}));
  const engine::Sequence third = make_seq(3, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13});
  EXPECT_EQ(kv.allocate(third), 12);    // 0, then 1 (cached first), then 3 through 1's id
  EXPECT_EQ(kv.block_table(3).block_ids(), (V{0, 1, 3, 4}));
  EXPECT_KV_INVARIANTS(kv);
}

}  // namespace
}  // namespace nanoserve
