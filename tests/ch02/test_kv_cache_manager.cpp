// KVCacheManager: allocation on demand, block tables and slots, prefix hits, exhaustion.
#include <gtest/gtest.h>

#include <vector>

#include "common/engine/kv/kv_cache_manager.h"
#include "kv_test_support.h"

namespace nanoserve {
namespace {

using testing::concat;
using testing::iota_tokens;
using testing::make_seq;
using testing::ref_counts;
using V = std::vector<int>;
using S = std::vector<int64_t>;

TEST(Ch02KVCacheManager, AllocatesCeilTokensOverBlockSizeBlocks) {
  engine::KVCacheManager kv(8, 4, false);
  const engine::Sequence seq = make_seq(1, iota_tokens(100, 10));
  EXPECT_TRUE(kv.can_allocate(seq));
  EXPECT_EQ(kv.allocate(seq), 0);
  EXPECT_EQ(kv.block_table(1).block_ids(), (V{0, 1, 2}));
  EXPECT_EQ(kv.block_table(1).num_tokens(), 10);
  EXPECT_EQ(kv.pool().free_queue_ids(), (V{3, 4, 5, 6, 7}));
  const engine::KVCacheMetrics m = kv.metrics();
  EXPECT_EQ(m.blocks_in_use, 3);
  EXPECT_EQ(m.used_slots, 10);
  EXPECT_EQ(m.allocated_slots, 12);
  EXPECT_EQ(m.prefill_tokens_computed, 10);
  EXPECT_KV_INVARIANTS(kv);
}

TEST(Ch02KVCacheManager, SlotIsBlockIdTimesBlockSizePlusOffset) {
  engine::KVCacheManager kv(3, 4, false);
  kv.allocate(make_seq(1, iota_tokens(0, 4)));  // block 0
  kv.allocate(make_seq(2, iota_tokens(0, 4)));  // block 1
  kv.free(1);                                   // queue: 2, 0
  kv.allocate(make_seq(3, iota_tokens(0, 6)));  // blocks 2, 0 — out of order on purpose
  const engine::BlockTable& t = kv.block_table(3);
  EXPECT_EQ(t.block_ids(), (V{2, 0}));
  EXPECT_EQ(t.slot_mapping(0, 6), (S{8, 9, 10, 11, 0, 1}));
  EXPECT_EQ(t.slot(5), 1);
  EXPECT_THROW(t.slot(6), InvalidArgument);
  EXPECT_THROW(t.slot_mapping(2, 7), InvalidArgument);
  EXPECT_KV_INVARIANTS(kv);
}

TEST(Ch02KVCacheManager, AppendSlotAddsABlockOnlyWhenTheLastOneIsFull) {
  engine::KVCacheManager kv(4, 4, false);
  engine::Sequence seq = make_seq(1, iota_tokens(0, 4));
  kv.allocate(seq);
  seq.token_ids.push_back(50);  // the token sampled after the prompt
  EXPECT_TRUE(kv.can_append(seq));
  EXPECT_EQ(kv.append_slot(seq), std::vector<engine::BlockCopy>{});
  EXPECT_EQ(kv.block_table(1).block_ids(), (V{0, 1}));
  for (int t = 51; t < 54; ++t) {
    seq.token_ids.push_back(t);
    kv.append_slot(seq);
  }
  EXPECT_EQ(kv.block_table(1).block_ids(), (V{0, 1}));
  EXPECT_EQ(kv.block_table(1).slot(7), 7);
  EXPECT_THROW(kv.append_slot(seq), InvalidArgument);  // no token without a slot left
  EXPECT_KV_INVARIANTS(kv);
}

TEST(Ch02KVCacheManager, PrefixHitAcrossRequestsSharesTheSystemPromptBlocks) {
  engine::KVCacheManager kv(8, 4, true);
  const V system = iota_tokens(1000, 8);  // two full blocks
  const engine::Sequence a = make_seq(1, concat(system, {1, 2, 3}));
  const engine::Sequence b = make_seq(2, concat(system, {4, 5, 6, 7, 8}));
  EXPECT_EQ(kv.allocate(a), 0);
  EXPECT_EQ(kv.num_cached_tokens(b), 8);
  EXPECT_EQ(kv.allocate(b), 8);
  EXPECT_EQ(kv.block_table(1).block_ids(), (V{0, 1, 2}));
  EXPECT_EQ(kv.block_table(2).block_ids(), (V{0, 1, 3, 4}));
  EXPECT_EQ(ref_counts(kv.pool()), (V{2, 2, 1, 1, 1, 0, 0, 0}));
  const engine::KVCacheMetrics m = kv.metrics();
  EXPECT_EQ(m.queries, 2 + 3);  // full blocks before each last token: (11-1)/4, (13-1)/4
  EXPECT_EQ(m.hits, 2);
  EXPECT_DOUBLE_EQ(m.hit_rate(), 0.4);
  EXPECT_EQ(m.prefill_tokens_computed, 11 + 5);
  EXPECT_EQ(m.prefill_tokens_skipped, 8);
  EXPECT_EQ(m.blocks_cached, 3);  // a's two system blocks and b's [4 5 6 7]
  EXPECT_KV_INVARIANTS(kv);
}

TEST(Ch02KVCacheManager, HitOnAFinishedRequestsBlocksTakesThemOutOfTheFreeQueue) {
  engine::KVCacheManager kv(6, 4, true);
  const V system = iota_tokens(1000, 8);
  kv.allocate(make_seq(1, concat(system, {1, 2})));  // blocks 0 1 2
  kv.free(1);
  EXPECT_EQ(kv.pool().free_queue_ids(), (V{3, 4, 5, 2, 1, 0}));  // reversed: tail first
  EXPECT_EQ(kv.allocate(make_seq(2, concat(system, {3}))), 8);
  EXPECT_EQ(kv.block_table(2).block_ids(), (V{0, 1, 3}));
  EXPECT_EQ(kv.pool().free_queue_ids(), (V{4, 5, 2}));
  EXPECT_KV_INVARIANTS(kv);
}

TEST(Ch02KVCacheManager, FullyCachedPromptStillRecomputesItsLastToken) {
  engine::KVCacheManager kv(8, 4, true);
  const V prompt = iota_tokens(7, 8);  // ends exactly on a block boundary
  kv.allocate(make_seq(1, prompt));
  kv.free(1);
  // Both blocks are cached, but the last token's logits are needed: the hit stops one block
  // short and that block is computed again, into a fresh block (cached blocks are immutable).
  EXPECT_EQ(kv.allocate(make_seq(2, prompt)), 4);
  EXPECT_EQ(kv.block_table(2).block_ids(), (V{0, 2}));
  EXPECT_EQ(kv.pool().block(2).chain_id, kv.pool().block(1).chain_id);  // a duplicate
  // One more token and the whole cached prompt is reused.
  EXPECT_EQ(kv.allocate(make_seq(3, concat(prompt, {99}))), 8);
  EXPECT_EQ(kv.block_table(3).block_ids(), (V{0, 1, 3}));
  // A one-token prompt has nothing to look up.
  EXPECT_EQ(kv.allocate(make_seq(4, {7})), 0);
  EXPECT_KV_INVARIANTS(kv);
}

TEST(Ch02KVCacheManager, ReverseOrderFreeEvictsTheChainTailFirst) {
  engine::KVCacheManager kv(4, 2, true);
  const V prompt = {1, 2, 3, 4, 5, 6};
  kv.allocate(make_seq(1, prompt));  // [1 2][3 4][5 6] in blocks 0 1 2, all cached
  kv.free(1);
  EXPECT_EQ(kv.pool().free_queue_ids(), (V{3, 2, 1, 0}));
  kv.allocate(make_seq(2, {8, 8, 9}));  // takes block 3 and evicts 2, the chain's tail
  EXPECT_EQ(kv.block_table(2).block_ids(), (V{3, 2}));
  EXPECT_EQ(kv.num_cached_tokens(make_seq(3, prompt)), 4);  // the head survived
  EXPECT_EQ(kv.metrics().evictions, 1);
  EXPECT_KV_INVARIANTS(kv);
}

TEST(Ch02KVCacheManager, TouchesItsHitsBeforeEvictingSoAHitIsNeverItsOwnVictim) {
  engine::KVCacheManager kv(3, 2, true);
  kv.allocate(make_seq(1, {1, 2, 3}));  // blocks 0 [1 2]*, 1 [3]
  kv.free(1);                           // queue 2 1 0
  kv.allocate(make_seq(2, {9, 9, 9}));  // blocks 2, 1
  kv.free(2);                           // queue 0 1 2: the cached [1 2] is at the head
  EXPECT_EQ(kv.pool().free_queue_ids(), (V{0, 1, 2}));
  EXPECT_EQ(kv.allocate(make_seq(3, {1, 2, 5, 6, 7})), 2);
  EXPECT_EQ(kv.block_table(3).block_ids(), (V{0, 1, 2}));
  EXPECT_EQ(kv.pool().block(0).token_ids, (V{1, 2}));
  EXPECT_KV_INVARIANTS(kv);
}

TEST(Ch02KVCacheManager, FreeCachedHitsCountAgainstTheFreeBlocks) {
  engine::KVCacheManager kv(2, 2, true);
  kv.allocate(make_seq(1, {1, 2, 3}));
  kv.free(1);  // both blocks free, block 0 cached
  const engine::Sequence big = make_seq(2, {1, 2, 4, 5, 6});  // hit 0 + 2 new = 3 blocks
  EXPECT_FALSE(kv.can_allocate(big));
  EXPECT_THROW(kv.allocate(big), engine::BlockPoolExhausted);
  EXPECT_EQ(kv.pool().free_queue_ids(), (V{1, 0}));
  EXPECT_TRUE(kv.pool().block(0).cached);
  const engine::Sequence fits = make_seq(3, {1, 2, 4});
  EXPECT_TRUE(kv.can_allocate(fits));
  EXPECT_EQ(kv.allocate(fits), 2);
  EXPECT_KV_INVARIANTS(kv);
}

TEST(Ch02KVCacheManager, ExhaustionIsRecoverableAndLeavesEveryTableUnchanged) {
  engine::KVCacheManager kv(4, 2, true);
  engine::Sequence a = make_seq(1, {1, 2, 3});
  kv.allocate(a);                        // blocks 0 1
  kv.allocate(make_seq(2, {5, 6, 7}));   // blocks 2 3
  const engine::KVCacheMetrics before = kv.metrics();
  a.token_ids.push_back(4);
  kv.append_slot(a);                     // fills block 1 in place: no new block
  a.token_ids.push_back(9);
  EXPECT_FALSE(kv.can_append(a));
  try {
    kv.append_slot(a);
    FAIL() << "expected BlockPoolExhausted";
  } catch (const engine::BlockPoolExhausted& e) {
    EXPECT_STREQ(e.what(), "KV cache: append_slots(sequence 1, 1) needs 1 free blocks but only "
                           "0 of 4 are free");
  }
  EXPECT_THROW(kv.allocate(make_seq(3, {8})), engine::BlockPoolExhausted);
  EXPECT_FALSE(kv.contains(3));
  EXPECT_EQ(kv.block_table(1).block_ids(), (V{0, 1}));
  EXPECT_EQ(kv.block_table(1).num_tokens(), 4);
  EXPECT_EQ(kv.block_table(2).block_ids(), (V{2, 3}));
  EXPECT_EQ(ref_counts(kv.pool()), (V{1, 1, 1, 1}));
  EXPECT_EQ(kv.metrics().queries, before.queries);  // failed calls count nothing
  kv.free(2);  // what a scheduler's preemption would do; then the retry succeeds
  EXPECT_EQ(kv.append_slot(a), std::vector<engine::BlockCopy>{});
  EXPECT_EQ(kv.block_table(1).block_ids(), (V{0, 1, 3}));
  EXPECT_KV_INVARIANTS(kv);
}

TEST(Ch02KVCacheManager, PrefixCachingOffNeverShares) {
  engine::KVCacheManager kv(8, 2, false);
  const V prompt = {1, 2, 3, 4, 5};
  kv.allocate(make_seq(1, prompt));
  EXPECT_EQ(kv.num_cached_tokens(make_seq(2, prompt)), 0);
  EXPECT_EQ(kv.allocate(make_seq(2, prompt)), 0);
  EXPECT_EQ(kv.block_table(2).block_ids(), (V{3, 4, 5}));
  EXPECT_EQ(kv.metrics().queries, 0);
  EXPECT_EQ(kv.metrics().blocks_cached, 0);
  EXPECT_KV_INVARIANTS(kv);
}

TEST(Ch02KVCacheManager, ChunkedPrefillReservesTheFirstChunkThenAppendsTheRest) {
  engine::KVCacheManager kv(8, 4, true);
  const engine::Sequence seq = make_seq(1, iota_tokens(0, 10));
  EXPECT_EQ(kv.allocate(seq, 3), 0);
  EXPECT_EQ(kv.block_table(1).num_tokens(), 3);
  EXPECT_EQ(kv.metrics().blocks_cached, 0);  // block 0 is not full yet
  kv.append_slots(seq, 4);
  EXPECT_EQ(kv.block_table(1).block_ids(), (V{0, 1}));
  EXPECT_TRUE(kv.pool().block(0).cached);
  kv.append_slots(seq, 3);
  EXPECT_EQ(kv.block_table(1).num_tokens(), 10);
  EXPECT_EQ(kv.block_table(1).block_ids(), (V{0, 1, 2}));
  EXPECT_EQ(kv.metrics().prefill_tokens_computed, 10);
  EXPECT_KV_INVARIANTS(kv);
}

TEST(Ch02KVCacheManager, RejectsMisuseWithClearErrors) {
  engine::KVCacheManager kv(4, 2, true);
  const engine::Sequence seq = make_seq(5, {1, 2, 3});
  kv.allocate(seq);
  EXPECT_THROW(kv.allocate(seq), InvalidArgument);                 // already live
  EXPECT_THROW(kv.allocate(make_seq(6, {})), InvalidArgument);     // no tokens
  EXPECT_THROW(kv.allocate(make_seq(6, {1, 2, 3}), 2), InvalidArgument);  // 2 cached, 1 left
  EXPECT_THROW(kv.allocate(make_seq(6, {4}), 0), InvalidArgument);
  EXPECT_THROW(kv.append_slots(make_seq(9, {1}), 1), InvalidArgument);
  EXPECT_THROW(kv.append_slots(seq, -1), InvalidArgument);
  EXPECT_THROW(kv.free(9), InvalidArgument);
  EXPECT_THROW(kv.block_table(9), InvalidArgument);
  try {
    kv.rollback(9, 1);
  } catch (const InvalidArgument& e) {
    EXPECT_STREQ(e.what(), "KVCacheManager::rollback: sequence 9 has no blocks (never allocated, "
                           "or freed)");
  }
  EXPECT_EQ(kv.num_sequences(), 1);
  EXPECT_KV_INVARIANTS(kv);
}

}  // namespace
}  // namespace nanoserve
