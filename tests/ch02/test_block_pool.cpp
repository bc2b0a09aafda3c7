// BlockPool: LRU allocation, reverse-order frees, touches, eviction and the hash index.
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "common/engine/kv/block_pool.h"
#include "kv_test_support.h"

namespace nanoserve {
namespace {

using testing::constant_hash;
using testing::ref_counts;
using V = std::vector<int>;

// Caches `block` (in use) as the chain parent + tokens, hashing like the manager does.
void cache(engine::BlockPool& pool, int block, const V& tokens, int parent = -1) {
  const engine::BlockHash parent_hash = parent < 0 ? engine::kRootBlockHash : pool.block(parent).hash;
  const engine::ChainId parent_chain = parent < 0 ? engine::kRootChainId : pool.block(parent).chain_id;
  pool.cache_full_block(block, pool.hash_block(parent_hash, tokens.data()), parent_chain,
                        tokens.data());
}

int find(const engine::BlockPool& pool, const V& tokens, int parent = -1) {
  const engine::BlockHash parent_hash = parent < 0 ? engine::kRootBlockHash : pool.block(parent).hash;
  const engine::ChainId parent_chain = parent < 0 ? engine::kRootChainId : pool.block(parent).chain_id;
  return pool.find_cached_block(pool.hash_block(parent_hash, tokens.data()), parent_chain,
                                tokens.data());
}

TEST(Ch02BlockPool, StartsWithEveryBlockFreeInIdOrder) {
  engine::BlockPool pool(5, 4, true);
  EXPECT_EQ(pool.free_queue_ids(), (V{0, 1, 2, 3, 4}));
  EXPECT_EQ(ref_counts(pool), (V{0, 0, 0, 0, 0}));
  EXPECT_EQ(pool.num_free_blocks(), 5);
  EXPECT_EQ(pool.num_cached_blocks(), 0);
  EXPECT_KV_INVARIANTS(pool);
}

TEST(Ch02BlockPool, RejectsImpossibleSizes) {
  EXPECT_THROW(engine::BlockPool(0, 16, true), InvalidArgument);
  EXPECT_THROW(engine::BlockPool(4, 0, true), InvalidArgument);
  EXPECT_THROW(engine::BlockPool((1 << 24) + 1, 16, true), InvalidArgument);
  EXPECT_THROW(engine::BlockPool(4, 4097, true), InvalidArgument);
  EXPECT_THROW(engine::BlockPool(4, 16, true, nullptr), InvalidArgument);
}

TEST(Ch02BlockPool, AllocatesFromTheHeadAndFreesToTheTailInTheGivenOrder) {
  engine::BlockPool pool(6, 2, false);
  EXPECT_EQ(pool.get_new_blocks(4), (V{0, 1, 2, 3}));
  EXPECT_EQ(ref_counts(pool), (V{1, 1, 1, 1, 0, 0}));
  pool.free_blocks({3, 1});  // a table [1, 3] freed in reverse
  EXPECT_EQ(pool.free_queue_ids(), (V{4, 5, 3, 1}));
  EXPECT_EQ(pool.get_new_blocks(3), (V{4, 5, 3}));
  EXPECT_EQ(pool.free_queue_ids(), (V{1}));
  pool.free_blocks({0, 2, 3, 4, 5});
  EXPECT_EQ(pool.free_queue_ids(), (V{1, 0, 2, 3, 4, 5}));
  EXPECT_KV_INVARIANTS(pool);
}

TEST(Ch02BlockPool, SharedBlockReturnsToTheQueueOnlyWithItsLastReference) {
  engine::BlockPool pool(3, 2, false);
  pool.get_new_blocks(1);
  pool.touch(0);  // a second table holds block 0
  EXPECT_EQ(pool.block(0).ref_cnt, 2);
  pool.free_blocks({0});
  EXPECT_EQ(pool.free_queue_ids(), (V{1, 2}));
  pool.free_blocks({0});
  EXPECT_EQ(pool.free_queue_ids(), (V{1, 2, 0}));
  EXPECT_KV_INVARIANTS(pool);
}

TEST(Ch02BlockPool, DoubleFreeIsALogicError) {
  engine::BlockPool pool(2, 2, false);
  pool.get_new_blocks(1);
  pool.free_blocks({0});
  EXPECT_THROW(pool.free_blocks({0}), std::logic_error);
  EXPECT_THROW(pool.free_blocks({1}), std::logic_error);
  EXPECT_THROW(pool.free_blocks({7}), InvalidArgument);
  EXPECT_KV_INVARIANTS(pool);
}

TEST(Ch02BlockPool, ExhaustionThrowsARecoverableErrorAndChangesNothing) {
  engine::BlockPool pool(3, 2, false);
  pool.get_new_blocks(2);
  try {
    pool.get_new_blocks(2);
    FAIL() << "expected BlockPoolExhausted";
  } catch (const engine::BlockPoolExhausted& e) {
    EXPECT_EQ(e.needed(), 2);
    EXPECT_EQ(e.available(), 1);
    EXPECT_STREQ(e.what(), "KV cache: get_new_blocks needs 2 free blocks but only 1 of 3 are free");
  }
  EXPECT_EQ(pool.free_queue_ids(), (V{2}));
  EXPECT_EQ(ref_counts(pool), (V{1, 1, 0}));
  EXPECT_KV_INVARIANTS(pool);
}

TEST(Ch02BlockPool, FreedCachedBlocksStayFindableUntilEvicted) {
  engine::BlockPool pool(4, 2, true);
  pool.get_new_blocks(2);  // a table [0, 1] holding tokens [1 2][3 4]
  cache(pool, 0, {1, 2});
  cache(pool, 1, {3, 4}, 0);
  pool.free_blocks({1, 0});
  EXPECT_EQ(pool.free_queue_ids(), (V{2, 3, 1, 0}));
  EXPECT_EQ(find(pool, {1, 2}), 0);
  EXPECT_EQ(find(pool, {3, 4}, 0), 1);
  EXPECT_EQ(pool.num_cached_blocks(), 2);
  EXPECT_KV_INVARIANTS(pool);
}

TEST(Ch02BlockPool, EvictsLeastRecentlyUsedCachedBlockFirst) {
  engine::BlockPool pool(4, 2, true);
  pool.get_new_blocks(4);
  cache(pool, 0, {1, 1});
  cache(pool, 1, {2, 2});
  cache(pool, 2, {3, 3});
  pool.free_blocks({2});  // three single-block requests finishing in the order 2, 0, 1
  pool.free_blocks({0});
  pool.free_blocks({1});
  pool.free_blocks({3});
  EXPECT_EQ(pool.free_queue_ids(), (V{2, 0, 1, 3}));
  EXPECT_EQ(pool.get_new_blocks(1), V{2});  // the least recently freed goes first
  EXPECT_EQ(find(pool, {3, 3}), -1);
  EXPECT_EQ(find(pool, {1, 1}), 0);
  EXPECT_EQ(pool.num_evictions(), 1);
  EXPECT_EQ(pool.get_new_blocks(2), (V{0, 1}));
  EXPECT_EQ(pool.num_cached_blocks(), 0);
  EXPECT_TRUE(pool.block(0).token_ids.empty());
  EXPECT_EQ(pool.num_evictions(), 3);
  EXPECT_KV_INVARIANTS(pool);
}

TEST(Ch02BlockPool, TouchTakesAFreeCachedBlockOutOfTheMiddleOfTheQueue) {
  engine::BlockPool pool(5, 2, true);
  pool.get_new_blocks(5);
  cache(pool, 2, {9, 9});
  pool.free_blocks({0, 1, 2, 3, 4});
  pool.touch(2);  // a prefix hit
  EXPECT_EQ(pool.free_queue_ids(), (V{0, 1, 3, 4}));
  EXPECT_EQ(pool.block(2).ref_cnt, 1);
  pool.touch(2);  // a second hit on a block in use: only the count changes
  EXPECT_EQ(pool.block(2).ref_cnt, 2);
  EXPECT_EQ(pool.free_queue_ids(), (V{0, 1, 3, 4}));
  EXPECT_TRUE(pool.block(2).cached);
  EXPECT_KV_INVARIANTS(pool);
}

TEST(Ch02BlockPool, OnlyInUseBlocksCanBeCachedAndOnlyWithPrefixCachingOn) {
  engine::BlockPool off(2, 2, false);
  off.get_new_blocks(1);
  EXPECT_THROW(cache(off, 0, {1, 2}), std::logic_error);
  engine::BlockPool on(2, 2, true);
  on.get_new_blocks(1);
  EXPECT_THROW(cache(on, 1, {1, 2}), std::logic_error);  // block 1 is free
  cache(on, 0, {1, 2});
  EXPECT_THROW(cache(on, 0, {1, 2}), std::logic_error);  // already cached
  EXPECT_KV_INVARIANTS(off);
  EXPECT_KV_INVARIANTS(on);
}

TEST(Ch02BlockPool, CollidingHashesNeverMatchADifferentChain) {
  engine::BlockPool pool(4, 2, true, &constant_hash);  // every block hashes to 42
  pool.get_new_blocks(4);
  cache(pool, 0, {1, 2});     // chain A: [1 2][5 6]
  cache(pool, 1, {5, 6}, 0);
  cache(pool, 2, {3, 4});     // chain B: [3 4][5 6] — same tokens as A's 2nd block
  cache(pool, 3, {5, 6}, 2);
  EXPECT_EQ(pool.block(1).hash, pool.block(3).hash);
  EXPECT_NE(pool.block(1).chain_id, pool.block(3).chain_id);
  EXPECT_EQ(find(pool, {1, 2}), 0);
  EXPECT_EQ(find(pool, {3, 4}), 2);
  EXPECT_EQ(find(pool, {5, 6}, 0), 1);
  EXPECT_EQ(find(pool, {5, 6}, 2), 3);
  EXPECT_EQ(find(pool, {5, 6}), -1);  // [5 6] as a first block was never cached
  EXPECT_EQ(find(pool, {1, 3}), -1);
  EXPECT_KV_INVARIANTS(pool);
}

TEST(Ch02BlockPool, DuplicateChainsShareAChainIdAndOutliveEachOther) {
  engine::BlockPool pool(3, 2, true);
  pool.get_new_blocks(3);
  cache(pool, 0, {7, 8});
  cache(pool, 1, {7, 8});  // the same first block computed twice
  EXPECT_EQ(pool.block(0).chain_id, pool.block(1).chain_id);
  EXPECT_EQ(find(pool, {7, 8}), 0);  // the one cached first
  pool.free_blocks({0, 1, 2});
  EXPECT_EQ(pool.get_new_blocks(1), V{0});  // evicts block 0
  EXPECT_EQ(find(pool, {7, 8}), 1);
  EXPECT_EQ(pool.num_cached_blocks(), 1);
  EXPECT_KV_INVARIANTS(pool);
}

TEST(Ch02BlockPool, MovedPoolKeepsWorking) {
  engine::BlockPool pool(3, 2, true);
  pool.get_new_blocks(2);
  cache(pool, 0, {1, 2});
  pool.free_blocks({1, 0});
  engine::BlockPool moved = std::move(pool);
  EXPECT_EQ(moved.free_queue_ids(), (V{2, 1, 0}));
  EXPECT_EQ(find(moved, {1, 2}), 0);
  moved.touch(0);
  EXPECT_EQ(moved.free_queue_ids(), (V{2, 1}));
  EXPECT_KV_INVARIANTS(moved);
}

}  // namespace
}  // namespace nanoserve
