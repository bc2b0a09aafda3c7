// Examples of use of chapter 2's engine types: the KV bookkeeping of common/engine/kv/ (host
// only) and the paged device side (PagedKVCache, PagedDecoder). Each TEST is one example: the
// code between its `//! [Name]` markers is what the type's documentation shows (Doxygen
// \snippet), and the test asserts what the example claims, so the documentation cannot go
// stale. Checks that the reader need not see (against the oracle) follow the closing marker.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "common/engine/decode/paged_decoder.h"
#include "common/engine/kv/block_hash.h"
#include "common/engine/kv/block_pool.h"
#include "common/engine/kv/block_table.h"
#include "common/engine/kv/free_block_queue.h"
#include "common/engine/kv/kv_cache_block.h"
#include "common/engine/kv/kv_cache_manager.h"
#include "common/engine/kv/sequence.h"
#include "common/engine/model/model_runner.h"
#include "common/engine/model/naive_kv_cache.h"
#include "common/engine/model/paged_kv_cache.h"
#include "common/generation/generate.h"
#include "common/model_bundle.h"
#include "common/oracle/forward.h"
#include "common/oracle/oracle_decoder.h"
#include "common/tolerances.h"
#include "ch01/engine_test_support.h"

namespace nanoserve::engine {
namespace {

using Ids = std::vector<int>;

TEST(Ch02Examples, BlockPool) {
  //! [BlockPool]
  BlockPool pool(/*num_blocks=*/4, /*block_size=*/2, /*enable_prefix_caching=*/true);
  const Ids blocks = pool.get_new_blocks(2);  // ref_cnt 1 each
  EXPECT_EQ(blocks, (Ids{0, 1}));
  EXPECT_EQ(pool.free_queue_ids(), (Ids{2, 3}));

  // Their KV has been written: cache block 0 as [5 6] and block 1 as [7 8], its child.
  const int first[] = {5, 6}, second[] = {7, 8};
  const BlockHash h0 = pool.hash_block(kRootBlockHash, first);
  pool.cache_full_block(0, h0, kRootChainId, first);
  pool.cache_full_block(1, pool.hash_block(h0, second), pool.block(0).chain_id, second);

  pool.free_blocks({1, 0});  // a finished sequence's blocks, tail first
  EXPECT_EQ(pool.free_queue_ids(), (Ids{2, 3, 1, 0}));  // free, but still cached

  // A later prompt that starts with [5 6] finds block 0 and takes it out of the queue.
  const int hit = pool.find_cached_block(h0, kRootChainId, first);
  EXPECT_EQ(hit, 0);
  pool.touch(hit);
  EXPECT_EQ(pool.free_queue_ids(), (Ids{2, 3, 1}));

  // Three new blocks: the two never used first, then cached block 1 is evicted.
  EXPECT_EQ(pool.get_new_blocks(3), (Ids{2, 3, 1}));
  EXPECT_EQ(pool.num_evictions(), 1);
  EXPECT_EQ(pool.check_invariants(), "");
  //! [BlockPool]
}

TEST(Ch02Examples, BlockPoolExhausted) {
  //! [BlockPoolExhausted]
  BlockPool pool(/*num_blocks=*/2, /*block_size=*/16, /*enable_prefix_caching=*/false);
  pool.get_new_blocks(1);
  try {
    pool.get_new_blocks(2);
    ADD_FAILURE() << "two blocks out of one free";
  } catch (const BlockPoolExhausted& e) {
    EXPECT_EQ(e.needed(), 2);
    EXPECT_EQ(e.available(), 1);
  }
  EXPECT_EQ(pool.num_free_blocks(), 1);  // the failed call changed nothing: retry after preempting
  //! [BlockPoolExhausted]
}

TEST(Ch02Examples, FreeBlockQueue) {
  //! [FreeBlockQueue]
  std::vector<KVCacheBlock> blocks(3);
  for (int i = 0; i < 3; ++i) blocks[static_cast<size_t>(i)].block_id = i;
  FreeBlockQueue queue({&blocks[0], &blocks[1], &blocks[2]});

  KVCacheBlock* taken = queue.popleft();  // the least recently freed
  EXPECT_EQ(taken->block_id, 0);
  queue.append(taken);                    // freed again: now the most recent
  EXPECT_EQ(queue.block_ids(), (Ids{1, 2, 0}));
  queue.remove(&blocks[2]);               // a prefix hit on a free block: O(1) from the middle
  EXPECT_EQ(queue.block_ids(), (Ids{1, 0}));
  EXPECT_EQ(queue.check_links(), "");
  //! [FreeBlockQueue]
}

TEST(Ch02Examples, KVCacheBlock) {
  //! [KVCacheBlock]
  BlockPool pool(/*num_blocks=*/2, /*block_size=*/2, /*enable_prefix_caching=*/true);
  const int id = pool.get_new_blocks(1)[0];
  const KVCacheBlock& block = pool.block(id);  // IN USE
  EXPECT_EQ(block.ref_cnt, 1);
  EXPECT_FALSE(block.cached);

  const int tokens[] = {5, 6};  // the block is full and its KV written: cache it
  pool.cache_full_block(id, pool.hash_block(kRootBlockHash, tokens), kRootChainId, tokens);
  EXPECT_TRUE(block.cached);    // IN USE, CACHED
  EXPECT_EQ(block.token_ids, (Ids{5, 6}));

  pool.free_blocks({id});       // FREE, CACHED: reusable by a prefix hit until evicted
  EXPECT_EQ(block.ref_cnt, 0);
  EXPECT_TRUE(block.cached);
  //! [KVCacheBlock]
}

TEST(Ch02Examples, Sequence) {
  //! [Sequence]
  Sequence seq;
  seq.seq_id = 7;
  seq.token_ids = {1, 15, 27, 4};  // the prompt
  seq.sampling.temperature = 0.0f;  // greedy
  EXPECT_EQ(seq.num_tokens(), 4);

  // A step computes the prompt's KV, and the token it samples is appended.
  seq.num_computed_tokens = 4;
  seq.token_ids.push_back(42);
  EXPECT_EQ(seq.num_tokens() - seq.num_computed_tokens, 1);  // the next step's one row
  //! [Sequence]
}

TEST(Ch02Examples, BlockTable) {
  //! [BlockTable]
  KVCacheManager kv(/*num_blocks=*/8, /*block_size=*/4, /*enable_prefix_caching=*/false);
  Sequence a;
  a.seq_id = 1;
  a.token_ids = {1, 2};  // takes block 0
  kv.allocate(a);
  Sequence b;
  b.seq_id = 2;
  b.token_ids = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  kv.allocate(b);

  const BlockTable& table = kv.block_table(2);
  EXPECT_EQ(table.block_ids(), (Ids{1, 2, 3}));  // positions 0-3, 4-7, 8-9
  EXPECT_EQ(table.num_tokens(), 10);
  EXPECT_EQ(table.slot(9), 3 * 4 + 1);            // block_ids[9 / 4] * 4 + 9 % 4
  EXPECT_EQ(table.slot_mapping(8, 10), (std::vector<int64_t>{12, 13}));
  //! [BlockTable]
}

TEST(Ch02Examples, KVCacheManager) {
  //! [KVCacheManager]
  KVCacheManager kv(/*num_blocks=*/8, /*block_size=*/4, /*enable_prefix_caching=*/true);
  Sequence a;
  a.seq_id = 1;
  a.token_ids = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};  // [1 2 3 4][5 6 7 8][9 10]
  a.num_computed_tokens = kv.allocate(a);          // nothing cached yet: 0
  EXPECT_EQ(a.num_computed_tokens, 0);

  Sequence b;  // shares a's first two blocks
  b.seq_id = 2;
  b.token_ids = {1, 2, 3, 4, 5, 6, 7, 8, 42};
  EXPECT_EQ(kv.num_cached_tokens(b), 8);
  b.num_computed_tokens = kv.allocate(b);  // only token 42 is left to compute
  EXPECT_EQ(b.num_computed_tokens, 8);
  EXPECT_EQ(kv.block_table(2).block_ids(), (Ids{0, 1, 3}));
  EXPECT_EQ(kv.pool().block(0).ref_cnt, 2);

  // a decodes: its token 11 fits the last block (block 2, 3 of 4 slots now).
  a.token_ids.push_back(11);
  EXPECT_TRUE(kv.append_slot(a).empty());  // no copy: block 2 is a's alone
  EXPECT_EQ(kv.block_table(1).num_tokens(), 11);

  kv.free(1);
  kv.free(2);
  EXPECT_EQ(kv.num_sequences(), 0);
  EXPECT_EQ(kv.check_invariants(), "");
  //! [KVCacheManager]
}

TEST(Ch02Examples, KVCacheMetrics) {
  //! [KVCacheMetrics]
  KVCacheManager kv(/*num_blocks=*/8, /*block_size=*/4, /*enable_prefix_caching=*/true);
  Sequence a;
  a.seq_id = 1;
  a.token_ids = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  kv.allocate(a);  // looks up 2 full blocks (never the last token's): 2 misses
  Sequence b;
  b.seq_id = 2;
  b.token_ids = {1, 2, 3, 4, 5, 6, 7, 8, 42};
  kv.allocate(b);  // looks up 2 full blocks: 2 hits

  const KVCacheMetrics m = kv.metrics();
  EXPECT_EQ(m.queries, 4);
  EXPECT_EQ(m.hits, 2);
  EXPECT_DOUBLE_EQ(m.hit_rate(), 0.5);
  EXPECT_EQ(m.prefill_tokens_skipped, 8);
  EXPECT_EQ(m.prefill_tokens_computed, 10 + 1);
  EXPECT_EQ(m.blocks_in_use, 4);                 // 0, 1 (shared), 2 (a's), 3 (b's)
  EXPECT_EQ(m.used_slots, 4 + 4 + 2 + 1);         // shared slots count once
  EXPECT_DOUBLE_EQ(m.utilization(), 11.0 / 16.0);
  //! [KVCacheMetrics]
}

TEST(Ch02Examples, BlockCopy) {
  //! [BlockCopy]
  KVCacheManager kv(/*num_blocks=*/8, /*block_size=*/4, /*enable_prefix_caching=*/false);
  Sequence parent;
  parent.seq_id = 1;
  parent.token_ids = {1, 2, 3, 4, 5, 6};  // blocks 0 (full) and 1 (2 of 4 slots)
  kv.allocate(parent);

  kv.fork(1, 2);  // parallel sampling: the child shares both blocks
  Sequence child = parent;
  child.seq_id = 2;
  child.token_ids.push_back(99);  // the child's first own token goes into shared block 1...
  const std::vector<BlockCopy> copies = kv.append_slot(child);
  EXPECT_EQ(copies, (std::vector<BlockCopy>{{/*src=*/1, /*dst=*/2}}));  // ...so it is copied
  EXPECT_EQ(kv.block_table(2).block_ids(), (Ids{0, 2}));  // full block 0 stays shared
  //! [BlockCopy]
}

/// The smallest model the engine tests use (4 layers, vocabulary 512), fp32 on the device.
class Ch02DeviceExamples : public ::testing::Test {
 protected:
  void SetUp() override {
    NANOSERVE_REQUIRE_DEVICE();
    model_ = load_model_bundle("synthetic:tiny").model;
  }
  Model model_;
};

TEST_F(Ch02DeviceExamples, PagedKVCache) {
  const Model& model = model_;
  //! [PagedKVCache]
  DeviceModel device(model, DType::kF32);
  ModelRunner runner(device);
  // The host decides where each token's K/V goes; the device pools have the same sizes.
  KVCacheManager kv(/*num_blocks=*/8, /*block_size=*/4, /*enable_prefix_caching=*/false);
  PagedKVCache cache(model.config, DType::kF32, /*num_blocks=*/8, /*block_size=*/4);

  Sequence seq;
  seq.seq_id = 0;
  seq.token_ids = {1, 20, 30, 40, 50, 60};
  kv.allocate(seq);
  const std::vector<float> logits = runner.forward(
      ForwardBatch::single(seq.seq_id, seq.token_ids, 0, LogitRows::kLast, &kv.block_table(0)),
      cache);
  EXPECT_EQ(logits.size(), static_cast<size_t>(model.config.vocab_size));

  // Layer 0's keys of the 6 positions, read back through the block table (blocks 0 and 1).
  EXPECT_EQ(cache.to_host(kv.block_table(0).block_ids(), 0, 6, false).size(),
            6u * static_cast<size_t>(model.config.kv_dim()));
  //! [PagedKVCache]
  const std::vector<float> want = oracle::forward_prompt(model, seq.token_ids);
  const std::size_t vocab = static_cast<std::size_t>(model.config.vocab_size);
  testing::expect_close(logits, std::vector<float>(want.end() - vocab, want.end()),
                        tol::kFp32Forward, "paged logits vs the oracle");
}

TEST_F(Ch02DeviceExamples, DeviceKVCache) {
  const Model& model = model_;
  //! [DeviceKVCache]
  DeviceModel device(model, DType::kF32);
  ModelRunner runner(device);
  const std::vector<int> prompt = {1, 20, 30, 40, 50, 60};

  // Chapter 1's contiguous cache: the sequence is a region.
  NaiveKVCache naive(model.config, DType::kF32, /*max_seq_len=*/64);
  const int region = naive.allocate();
  // Chapter 2's paged cache: the sequence is a block table.
  KVCacheManager kv(/*num_blocks=*/8, /*block_size=*/4, /*enable_prefix_caching=*/false);
  PagedKVCache paged(model.config, DType::kF32, /*num_blocks=*/8, /*block_size=*/4);
  Sequence seq;
  seq.seq_id = 0;
  seq.token_ids = prompt;
  kv.allocate(seq);

  // The same runner, the same forward pass, behind the one interface.
  const DeviceKVCache& attention = paged;
  EXPECT_EQ(attention.layout().n_kv_heads, model.config.n_kv_heads);
  EXPECT_EQ(attention.layout().dtype, DType::kF32);
  const std::vector<float> from_naive =
      runner.forward(ForwardBatch::single(region, prompt, 0, LogitRows::kLast), naive);
  const std::vector<float> from_paged = runner.forward(
      ForwardBatch::single(0, prompt, 0, LogitRows::kLast, &kv.block_table(0)), paged);
  testing::expect_close(from_paged, from_naive, tol::kFp32Forward, "paged vs naive");
  // Where the pass wrote layer 0's keys and values: the pool's slots, as the slot mapping says.
  const KVWriteTarget written = paged.write_target(0);
  EXPECT_EQ(written.num_slots, 8 * 4);  // every slot of layer 0's pool
  EXPECT_EQ(written.dtype, DType::kF32);
  //! [DeviceKVCache]
}

TEST_F(Ch02DeviceExamples, PagedDecoder) {
  const Model& model = model_;
  //! [PagedDecoder]
  PagedDecoderOptions options;
  options.max_seq_len = 64;
  options.block_size = 4;
  PagedDecoder decoder(std::make_unique<DeviceModel>(model, DType::kF32), options);

  GenerateOptions greedy;
  greedy.max_new_tokens = 8;
  greedy.sampling.temperature = 0.0f;
  const GenerateResult r = generate(decoder, {1, 20, 30}, greedy);
  EXPECT_EQ(r.generated(), 8);
  EXPECT_EQ(decoder.length(), 3 + 8 - 1);  // the last sampled token is never fed back

  // Speculative decoding's rollback: forget positions 5.. and continue from there.
  decoder.truncate(5);
  EXPECT_EQ(decoder.length(), 5);
  const std::vector<float> logits = decoder.forward({r.tokens[5]}, 5);
  EXPECT_EQ(logits.size(), static_cast<size_t>(decoder.vocab_size()));
  EXPECT_EQ(decoder.manager().check_invariants(), "");
  //! [PagedDecoder]
  oracle::OracleDecoder reference(model);
  EXPECT_EQ(r.tokens, generate(reference, {1, 20, 30}, greedy).tokens);
}

}  // namespace
}  // namespace nanoserve::engine
