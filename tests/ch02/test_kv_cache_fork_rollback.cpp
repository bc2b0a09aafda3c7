// KVCacheManager: copy-on-write fork (parallel sampling) and rollback (speculative decoding).
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
using Copies = std::vector<engine::BlockCopy>;

TEST(Ch02KVCacheFork, ChildSharesEveryBlockWithoutAllocating) {
  engine::KVCacheManager kv(4, 4, true);
  kv.allocate(make_seq(1, iota_tokens(0, 6)));  // blocks 0 [0..3]*, 1 [4 5 _ _]
  kv.fork(1, 2);
  EXPECT_EQ(kv.block_table(2).block_ids(), (V{0, 1}));
  EXPECT_EQ(kv.block_table(2).num_tokens(), 6);
  EXPECT_EQ(ref_counts(kv.pool()), (V{2, 2, 0, 0}));
  EXPECT_EQ(kv.metrics().used_slots, 6);  // shared slots count once
  EXPECT_THROW(kv.fork(1, 2), InvalidArgument);
  EXPECT_THROW(kv.fork(7, 3), InvalidArgument);
  EXPECT_KV_INVARIANTS(kv);
}

TEST(Ch02KVCacheFork, SharedPartialBlockIsCopiedBeforeTheFirstWrite) {
  engine::KVCacheManager kv(4, 4, false);
  engine::Sequence parent = make_seq(1, iota_tokens(0, 6));
  kv.allocate(parent);
  kv.fork(1, 2);
  engine::Sequence child = parent;
  child.seq_id = 2;
  parent.token_ids.push_back(40);
  EXPECT_EQ(kv.append_slot(parent), (Copies{{1, 2}}));  // parent moves to a copy of block 1
  EXPECT_EQ(kv.block_table(1).block_ids(), (V{0, 2}));
  EXPECT_EQ(ref_counts(kv.pool()), (V{2, 1, 1, 0}));
  child.token_ids.push_back(41);
  EXPECT_EQ(kv.append_slot(child), Copies{});  // now the sole owner: writes in place
  EXPECT_EQ(kv.block_table(2).block_ids(), (V{0, 1}));
  EXPECT_EQ(kv.metrics().block_copies, 1);
  EXPECT_KV_INVARIANTS(kv);
}

TEST(Ch02KVCacheFork, SharedFullLastBlockNeedsNoCopy) {
  engine::KVCacheManager kv(4, 4, true);
  engine::Sequence parent = make_seq(1, iota_tokens(0, 8));
  kv.allocate(parent);
  kv.fork(1, 2);
  parent.token_ids.push_back(40);
  EXPECT_EQ(kv.append_slot(parent), Copies{});
  EXPECT_EQ(kv.block_table(1).block_ids(), (V{0, 1, 2}));
  EXPECT_KV_INVARIANTS(kv);
}

TEST(Ch02KVCacheFork, ParallelSamplingOfFourUsesTenBlocksInsteadOfSixteen) {
  // Prompt of 10 tokens, block size 4, 4 samples of 6 tokens each: 16 positions per sample.
  // Unshared: 4 × 4 = 16 blocks. Shared: the 2 full prompt blocks once, the partial third
  // block copied by the first 3 writers (the 4th keeps the original), and 4 private 4th blocks.
  engine::KVCacheManager kv(32, 4, true);
  std::vector<engine::Sequence> samples(4, make_seq(0, iota_tokens(500, 10)));
  kv.allocate(samples[0]);
  for (int i = 1; i < 4; ++i) {
    samples[size_t(i)].seq_id = i;
    kv.fork(0, i);
  }
  Copies copies;
  for (int step = 0; step < 6; ++step) {
    for (engine::Sequence& s : samples) {
      s.token_ids.push_back(int(s.seq_id) * 100 + step);
      for (const engine::BlockCopy& c : kv.append_slot(s)) copies.push_back(c);
    }
  }
  EXPECT_EQ(copies, (Copies{{2, 3}, {2, 4}, {2, 5}}));
  EXPECT_EQ(kv.metrics().blocks_in_use, 10);
  EXPECT_EQ(kv.block_table(3).block_ids(), (V{0, 1, 2, 9}));
  EXPECT_KV_INVARIANTS(kv);
}

TEST(Ch02KVCacheRollback, ReleasesEmptiedBlocksTailFirst) {
  engine::KVCacheManager kv(5, 4, false);
  kv.allocate(make_seq(1, iota_tokens(0, 10)));  // blocks 0 1 2
  kv.rollback(1, 7);
  EXPECT_EQ(kv.block_table(1).block_ids(), V{0});
  EXPECT_EQ(kv.block_table(1).num_tokens(), 3);
  EXPECT_EQ(kv.pool().free_queue_ids(), (V{3, 4, 2, 1}));
  kv.rollback(1, 0);
  EXPECT_EQ(kv.block_table(1).num_tokens(), 3);
  EXPECT_THROW(kv.rollback(1, 4), InvalidArgument);
  kv.rollback(1, 3);
  EXPECT_EQ(kv.block_table(1).block_ids(), V{});
  EXPECT_EQ(kv.pool().free_queue_ids(), (V{3, 4, 2, 1, 0}));
  kv.append_slots(make_seq(1, {5, 6}), 2);  // an emptied table grows again
  EXPECT_EQ(kv.block_table(1).block_ids(), V{3});
  EXPECT_KV_INVARIANTS(kv);
}

TEST(Ch02KVCacheRollback, RejectedDraftsInACachedBlockAreCopiedNotOverwritten) {
  engine::KVCacheManager kv(4, 4, true);
  engine::Sequence seq = make_seq(1, {1, 2, 3});
  kv.allocate(seq);                     // block 0: [1 2 3 _]
  seq.token_ids = {1, 2, 3, 10, 11, 12};  // three draft tokens
  kv.append_slots(seq, 3);              // block 0 full and cached as [1 2 3 10], block 1
  EXPECT_TRUE(kv.pool().block(0).cached);
  kv.rollback(1, 3);                    // drafts 10 11 12 rejected
  seq.token_ids = {1, 2, 3, 20};        // the target's correction
  EXPECT_EQ(kv.block_table(1).block_ids(), V{0});
  // Block 0 stays cached (its KV is valid for [1 2 3 10]); writing 20 needs a private copy.
  EXPECT_EQ(kv.append_slot(seq), (Copies{{0, 2}}));
  EXPECT_EQ(kv.block_table(1).block_ids(), V{2});
  EXPECT_EQ(kv.pool().block(0).token_ids, (V{1, 2, 3, 10}));
  EXPECT_EQ(kv.pool().block(2).token_ids, (V{1, 2, 3, 20}));
  EXPECT_EQ(kv.pool().free_queue_ids(), (V{3, 1, 0}));
  EXPECT_KV_INVARIANTS(kv);
}

TEST(Ch02KVCacheRollback, UncachesNothingThatAnotherSequenceShares) {
  engine::KVCacheManager kv(8, 4, true);
  const V system = iota_tokens(100, 8);
  kv.allocate(make_seq(1, concat(system, {1})));  // blocks 0 1 (cached), 2
  engine::Sequence b = make_seq(2, concat(system, {2}));
  EXPECT_EQ(kv.allocate(b), 8);                   // hits 0 1, new 3
  kv.rollback(2, 6);                              // b keeps 3 tokens, inside shared block 0
  EXPECT_EQ(kv.block_table(2).block_ids(), V{0});
  EXPECT_EQ(ref_counts(kv.pool()), (V{2, 1, 1, 0, 0, 0, 0, 0}));
  b.token_ids = {100, 101, 102, 7};
  EXPECT_EQ(kv.append_slot(b), (Copies{{0, 4}}));
  EXPECT_EQ(kv.block_table(1).block_ids(), (V{0, 1, 2}));  // untouched
  EXPECT_EQ(kv.pool().block(0).token_ids, (V{100, 101, 102, 103}));
  EXPECT_EQ(kv.num_cached_tokens(make_seq(3, concat(system, {1}))), 8);
  EXPECT_KV_INVARIANTS(kv);
}

}  // namespace
}  // namespace nanoserve
