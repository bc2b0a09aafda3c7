// Several sequences in one forward pass over paged KV: a varlen prefill of three prompts of
// different lengths, then decode steps with one row per sequence (the paged decode kernel),
// must give every sequence the tokens it gets alone — and a full pool in the middle of a batch
// is an error the caller recovers from by freeing a sequence (what chapter 4's preemption does).
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "ch01/engine_test_support.h"
#include "common/engine/decode/paged_decoder.h"
#include "common/model_bundle.h"
#include "common/sampling/sampler.h"

namespace nanoserve::engine {
namespace {

using nanoserve::testing::greedy;

class Ch02BatchedDecode : public ::testing::Test {
 protected:
  void SetUp() override {
    NANOSERVE_REQUIRE_DEVICE();
    model_ = load_model_bundle("synthetic:tiny").model;
    device_ = std::make_unique<DeviceModel>(model_, DType::kF32);
  }
  std::vector<int> prompt(int n, int salt) const {
    std::vector<int> t;
    for (int i = 0; i < n; ++i) t.push_back((31 * i + 5 + 7 * salt) % model_.config.vocab_size);
    return t;
  }
  // Greedy tokens of one sequence decoded alone (its own manager, cache and runner).
  std::vector<int> alone(const std::vector<int>& p, int steps) const {
    engine::KVCacheManager manager(64, 4, false);
    PagedKVCache cache(model_.config, DType::kF32, manager.pool().num_blocks(),
                     manager.block_size(), 128);
    ModelRunner runner(*device_, {64, 1});
    PagedDecoder backend(runner, manager, cache, 0);
    const GenerateResult r = greedy(backend, p, steps);
    return {r.tokens.begin() + r.prompt_tokens, r.tokens.end()};
  }
  // One row per sequence at its last token; logits for every row.
  static ForwardBatch decode_batch(const std::vector<engine::Sequence*>& seqs,
                                   const engine::KVCacheManager& manager) {
    ForwardBatch b;
    for (const engine::Sequence* s : seqs) {
      b.add_chunk(s->seq_id, &s->token_ids.back(), 1, s->num_tokens() - 1,
                  &manager.block_table(s->seq_id));
      b.logit_rows.push_back(b.rows() - 1);
    }
    return b;
  }
  int argmax_row(const std::vector<float>& logits, std::size_t row) const {
    const int vocab = model_.config.vocab_size;
    return argmax(logits.data() + row * std::size_t(vocab), vocab);
  }
  Model model_;
  std::unique_ptr<DeviceModel> device_;
};

TEST_F(Ch02BatchedDecode, ThreeSequencesInOneBatchEqualEachRunAlone) {
  const int steps = 8;
  const std::vector<std::vector<int>> prompts = {prompt(5, 0), prompt(17, 1), prompt(30, 2)};
  engine::KVCacheManager manager(64, 4, false);  // blocks of 4: the tables interleave in the pool
  PagedKVCache cache(model_.config, DType::kF32, manager.pool().num_blocks(),
                     manager.block_size(), 128);
  ModelRunner runner(*device_, {64, 3});
  std::vector<engine::Sequence> seqs(3);
  ForwardBatch prefill;
  for (int i = 0; i < 3; ++i) {
    seqs[std::size_t(i)].seq_id = 10 + i;
    seqs[std::size_t(i)].token_ids = prompts[std::size_t(i)];
    manager.allocate(seqs[std::size_t(i)]);
    prefill.add_chunk(10 + i, prompts[std::size_t(i)].data(),
                      int(prompts[std::size_t(i)].size()), 0, &manager.block_table(10 + i));
    prefill.logit_rows.push_back(prefill.rows() - 1);
  }
  std::vector<float> logits = runner.forward(prefill, cache);  // varlen prefill, 3 chunks
  EXPECT_FALSE(cache.last_pass_was_decode());
  std::vector<std::vector<int>> got(3);
  for (int step = 0; step < steps; ++step) {
    std::vector<engine::Sequence*> batch;
    for (std::size_t i = 0; i < 3; ++i) {
      got[i].push_back(argmax_row(logits, i));
      seqs[i].token_ids.push_back(got[i].back());
      batch.push_back(&seqs[i]);
    }
    if (step + 1 == steps) break;  // the last token is sampled, never fed back
    for (engine::Sequence* s : batch) EXPECT_TRUE(manager.append_slot(*s).empty());
    logits = runner.forward(decode_batch(batch, manager), cache);
    EXPECT_TRUE(cache.last_pass_was_decode());
  }
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(got[i], alone(prompts[i], steps)) << "sequence " << i;
  }
  EXPECT_EQ(manager.check_invariants(), "");
}

TEST_F(Ch02BatchedDecode, AFullPoolMidBatchIsRecoveredByFreeingASequence) {
  // 3 prompts of 8 tokens in blocks of 4: 6 blocks of the 7; the first decode step needs a
  // fresh block for each sequence (position 8 starts block 2).
  engine::KVCacheManager manager(7, 4, false);
  PagedKVCache cache(model_.config, DType::kF32, manager.pool().num_blocks(),
                     manager.block_size(), 64);
  ModelRunner runner(*device_, {32, 3});
  std::vector<engine::Sequence> seqs(3);
  for (int i = 0; i < 3; ++i) {
    seqs[std::size_t(i)].seq_id = i;
    seqs[std::size_t(i)].token_ids = prompt(8, i);
    manager.allocate(seqs[std::size_t(i)]);
    const std::vector<float> l =
        runner.forward(ForwardBatch::single(i, prompt(8, i), 0, LogitRows::kLast,
                                            &manager.block_table(i)),
                       cache);
    seqs[std::size_t(i)].token_ids.push_back(argmax_row(l, 0));
  }
  EXPECT_TRUE(manager.append_slot(seqs[0]).empty());
  const std::vector<int> table1 = manager.block_table(1).block_ids();
  try {
    manager.append_slot(seqs[1]);
    ADD_FAILURE() << "a full pool handed out a block";
  } catch (const engine::BlockPoolExhausted& e) {
    EXPECT_EQ(e.needed(), 1);
    EXPECT_EQ(e.available(), 0);
    EXPECT_NE(std::string(e.what()).find("append_slots(sequence 1"), std::string::npos) << e.what();
  }
  EXPECT_EQ(manager.block_table(1).block_ids(), table1);  // nothing changed
  EXPECT_EQ(manager.block_table(1).num_tokens(), 8);
  EXPECT_EQ(manager.check_invariants(), "");
  // Recover as a scheduler would: preempt sequence 2 (free its blocks), run the others.
  manager.free(2);
  EXPECT_TRUE(manager.append_slot(seqs[1]).empty());
  std::vector<float> logits = runner.forward(decode_batch({&seqs[0], &seqs[1]}, manager), cache);
  for (std::size_t i = 0; i < 2; ++i) {
    const std::vector<int> want = alone(prompt(8, int(i)), 2);
    EXPECT_EQ(seqs[i].token_ids.back(), want[0]);
    EXPECT_EQ(argmax_row(logits, i), want[1]) << "sequence " << i;
  }
  EXPECT_EQ(manager.check_invariants(), "");
}

}  // namespace
}  // namespace nanoserve::engine
