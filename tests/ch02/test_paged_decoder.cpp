// PagedDecoder / PagedKVCache: the kernel forward over paged KV equals chapter 1's naive
// cache — greedy tokens identical, logits within fp32 tolerance of the oracle — with small
// blocks, shuffled physical blocks, prefix-cache hits, rollback, and on stories260K.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <vector>

#include "common/engine/decode/naive_decoder.h"
#include "common/engine/decode/paged_decoder.h"
#include "common/error.h"
#include "common/model_bundle.h"
#include "common/oracle/forward.h"
#include "common/tolerances.h"
#include "ch01/engine_test_support.h"
#include "reference_story.h"
#include "test_support.h"

namespace nanoserve::engine {
namespace {

using nanoserve::testing::greedy;

// Scrambles the pool's free queue: allocates every block through throwaway sequences of one
// block each, then frees them in a random order, so later allocations get physical blocks in
// no particular order (the tables are then anything but [0, 1, 2, …]).
void shuffle_free_blocks(engine::KVCacheManager& manager, unsigned seed) {
  const int n = manager.pool().num_free_blocks();
  std::vector<std::int64_t> ids;
  for (int i = 0; i < n; ++i) {
    engine::Sequence s;
    s.seq_id = 1000000 + i;
    s.token_ids = {i % 7 + 1};
    manager.allocate(s);
    ids.push_back(s.seq_id);
  }
  std::shuffle(ids.begin(), ids.end(), std::mt19937(seed));
  for (std::int64_t id : ids) manager.free(id);
}

class Ch02PagedDecoder : public ::testing::Test {
 protected:
  void SetUp() override {
    NANOSERVE_REQUIRE_DEVICE();
    model_ = load_model_bundle("synthetic:tiny").model;
    device_ = std::make_unique<DeviceModel>(model_, DType::kF32);
  }
  std::vector<int> prompt(int n, int salt = 0) const {
    std::vector<int> t;
    for (int i = 0; i < n; ++i) t.push_back((37 * i + 11 + salt) % model_.config.vocab_size);
    return t;
  }
  Model model_;
  std::unique_ptr<DeviceModel> device_;
};

TEST_F(Ch02PagedDecoder, GreedyTokensEqualTheNaiveCacheWithShuffledBlocks) {
  NaiveDecoder naive(*device_, CacheMode::kNaiveCache, 128);
  const GenerateResult want = greedy(naive, prompt(21), 24);
  for (int block_size : {1, 4, 16}) {
    engine::KVCacheManager manager(256, block_size, false);
    shuffle_free_blocks(manager, 7u + unsigned(block_size));
    PagedKVCache cache(model_.config, DType::kF32, manager.pool().num_blocks(),
                     manager.block_size(), 128);
    ModelRunner runner(*device_, {8, 8});  // the 21-token prompt runs in chunks of 8, 8 and 5
    PagedDecoder paged(runner, manager, cache, 1);
    const GenerateResult got = greedy(paged, prompt(21), 24);
    EXPECT_EQ(got.tokens, want.tokens) << "block size " << block_size;
    const std::vector<int>& ids = manager.block_table(1).block_ids();
    EXPECT_FALSE(std::is_sorted(ids.begin(), ids.end())) << "the blocks were not shuffled";
    EXPECT_EQ(manager.check_invariants(), "");
  }
}

TEST_F(Ch02PagedDecoder, AllPositionLogitsMatchTheOracleAcrossBlockBoundaries) {
  engine::KVCacheManager manager(64, 4, false);
  shuffle_free_blocks(manager, 3);
  PagedKVCache cache(model_.config, DType::kF32, manager.pool().num_blocks(),
                     manager.block_size(), 64);
  ModelRunner runner(*device_, {17, 17});
  PagedDecoder paged(runner, manager, cache, 5);
  const std::vector<int> tokens = prompt(33);
  // 17 rows (a prefill crossing 4 block boundaries), then decode-sized pieces of 1 and 3.
  std::vector<float> got = paged.forward_all({tokens.begin(), tokens.begin() + 17}, 0);
  for (int pos = 17; pos < 33;) {
    const int n = pos % 2 == 0 ? 3 : 1;
    const int end = std::min(33, pos + n);
    const std::vector<float> part = paged.forward_all({tokens.begin() + pos, tokens.begin() + end}, pos);
    got.insert(got.end(), part.begin(), part.end());
    pos = end;
  }
  testing::expect_close(got, oracle::forward_prompt(model_, tokens), tol::kFp32Forward,
                        "33 positions, block size 4");
}

TEST_F(Ch02PagedDecoder, APrefixCacheHitSkipsWorkAndChangesNoToken) {
  engine::KVCacheManager manager(128, 4, true);
  PagedKVCache cache(model_.config, DType::kF32, manager.pool().num_blocks(),
                     manager.block_size(), 128);
  ModelRunner runner(*device_, {64, 1});
  PagedDecoder first(runner, manager, cache, 1);
  const GenerateResult a = greedy(first, prompt(30), 12);
  first.reset();  // its full blocks stay in the prefix cache
  PagedDecoder second(runner, manager, cache, 2);
  const GenerateResult b = greedy(second, prompt(30), 12);
  EXPECT_EQ(b.tokens, a.tokens);
  EXPECT_EQ(second.rows_cached(), 28);  // 7 full blocks of the 30-token prompt
  EXPECT_EQ(second.rows_computed(), 2 + 11);  // the prompt's last 2 tokens, then 11 decodes
  EXPECT_EQ(manager.check_invariants(), "");
  // forward_all cannot return logits of rows it did not compute.
  PagedDecoder third(runner, manager, cache, 3);
  EXPECT_THROW(third.forward_all(prompt(30), 0), InvalidArgument);
  EXPECT_FALSE(manager.contains(3));
}

TEST_F(Ch02PagedDecoder, RollbackThenRecomputeEqualsNeverHavingGoneThere) {
  engine::KVCacheManager manager(64, 4, false);
  PagedKVCache cache(model_.config, DType::kF32, manager.pool().num_blocks(),
                     manager.block_size(), 64);
  ModelRunner runner(*device_, {16, 16});
  PagedDecoder paged(runner, manager, cache, 9);
  const std::vector<int> tokens = prompt(20);
  paged.forward_all({tokens.begin(), tokens.begin() + 10}, 0);
  paged.forward_all(prompt(7, 99), 10);  // "rejected drafts" at positions 10..16
  paged.truncate(10);
  EXPECT_EQ(paged.length(), 10);
  const std::vector<float> got = paged.forward_all({tokens.begin() + 10, tokens.end()}, 10);
  const std::vector<float> all = oracle::forward_prompt(model_, tokens);
  const std::vector<float> want(all.begin() + 10 * model_.config.vocab_size, all.end());
  testing::expect_close(got, want, tol::kFp32Forward, "after rollback");
  EXPECT_EQ(manager.check_invariants(), "");
}

TEST_F(Ch02PagedDecoder, AFullPoolThrowsAndLeavesTheSequenceUsable) {
  engine::KVCacheManager manager(3, 4, false);  // 12 slots
  PagedKVCache cache(model_.config, DType::kF32, manager.pool().num_blocks(),
                     manager.block_size(), 64);
  ModelRunner runner(*device_, {16, 1});
  PagedDecoder paged(runner, manager, cache, 1);
  paged.forward(prompt(10), 0);
  EXPECT_NO_THROW(paged.forward({5}, 10));
  EXPECT_NO_THROW(paged.forward({6}, 11));
  EXPECT_THROW(paged.forward({7}, 12), engine::BlockPoolExhausted);
  EXPECT_EQ(paged.length(), 12);
  EXPECT_EQ(manager.check_invariants(), "");
  paged.truncate(11);
  EXPECT_NO_THROW(paged.forward({7}, 11));
}

TEST_F(Ch02PagedDecoder, RefusesPlansWithoutBlockTablesOrWithWrongSlots) {
  engine::KVCacheManager manager(8, 4, false);
  PagedKVCache cache(model_.config, DType::kF32, manager.pool().num_blocks(),
                     manager.block_size(), 32);
  ModelRunner runner(*device_, {8, 1});
  const auto message = [&](const ForwardBatch& batch) {
    try {
      runner.forward(batch, cache);
    } catch (const InvalidArgument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  // No block table, no slots: the plan says nothing of where the rows go.
  EXPECT_NE(message(ForwardBatch::single(4, {1, 2}, 0, LogitRows::kLast)).find("2 rows but 0 slots"),
            std::string::npos);
  engine::Sequence s;
  s.seq_id = 4;
  s.token_ids = {1, 2};
  manager.allocate(s);
  const engine::BlockTable& table = manager.block_table(4);
  EXPECT_THROW(ForwardBatch::single(4, {1, 2, 3}, 0, LogitRows::kLast, &table),
               InvalidArgument);  // only 2 slots reserved
  ForwardBatch wrong_slot = ForwardBatch::single(4, {1, 2}, 0, LogitRows::kLast, &table);
  wrong_slot.slot_mapping[1] += 1;
  EXPECT_NE(message(wrong_slot).find("but its block table says"), std::string::npos);
  ForwardBatch outside = ForwardBatch::single(4, {1, 2}, 0, LogitRows::kLast, &table);
  outside.chunks[0].block_ids[0] = 8;  // the pool has blocks 0..7
  outside.slot_mapping = {32, 33};
  EXPECT_NE(message(outside).find("outside the pool [0, 8)"), std::string::npos);
  ForwardBatch bad_copy = ForwardBatch::single(4, {1, 2}, 0, LogitRows::kLast, &table);
  bad_copy.block_copies.push_back({0, -1});
  EXPECT_NE(message(bad_copy).find("block copy destination -1"), std::string::npos);
  EXPECT_EQ(message(ForwardBatch::single(4, {1, 2}, 0, LogitRows::kLast, &table)), "accepted");
}

TEST(Ch02PagedDecoderReal, Stories260KGreedyReproducesTheReferenceStory) {
  NANOSERVE_REQUIRE_DEVICE();
  NANOSERVE_REQUIRE_DATA(path, "stories260K.bin");
  const ModelBundle b = load_model_bundle(path);
  const DeviceModel device(b.model, DType::kF32);
  engine::KVCacheManager manager(64, 16, true);
  shuffle_free_blocks(manager, 11);
  PagedKVCache cache(b.model.config, DType::kF32, manager.pool().num_blocks(),
                     manager.block_size());
  ModelRunner runner(device, {64, 1});
  PagedDecoder backend(runner, manager, cache, 1);
  testing::expect_reference_story(backend, *b.tokenizer);
}

}  // namespace
}  // namespace nanoserve::engine
