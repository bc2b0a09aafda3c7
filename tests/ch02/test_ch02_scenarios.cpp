// The `multiturn` and `parallel-sampling` scenarios of the chapter-2 program on the synthetic
// tiny model: prefix caching and block sharing save work without changing a token, and the
// saved work is what the caching rules predict.
#include <gtest/gtest.h>

#include <memory>

#include "ch01/engine_test_support.h"
#include "chapters/ch02_paged_kv_cache/multiturn.h"
#include "chapters/ch02_paged_kv_cache/parallel_sampling.h"
#include "common/engine/kv/block_pool.h"
#include "common/model_bundle.h"

namespace nanoserve::ch02 {
namespace {

class Ch02Scenarios : public ::testing::Test {
 protected:
  void SetUp() override {
    NANOSERVE_REQUIRE_DEVICE();
    bundle_ = std::make_unique<ModelBundle>(load_model_bundle("synthetic:tiny"));
    device_ = std::make_unique<engine::DeviceModel>(bundle_->model, DType::kF32);
  }
  std::unique_ptr<ModelBundle> bundle_;
  std::unique_ptr<engine::DeviceModel> device_;
};

// Two sessions of 3 and 1 turns (byte tokens: every character is one token).
ChatScript three_turn_script() {
  return parse_chat_script("system: Tell a short story.\n"
                           "session: a\nuser: A cat?\nuser: Then?\nuser: End.\n"
                           "session: b\nuser: A dog?\n", "test");
}

TEST_F(Ch02Scenarios, MultiturnRepliesAreIdenticalAndCachingSkipsWhatItPredicts) {
  MultiturnConfig c;
  c.block_size = 4;
  c.num_blocks = 256;
  c.max_new_tokens = 3;
  const ChatScript script = three_turn_script();
  const MultiturnRun off = run_multiturn(*device_, *bundle_->tokenizer, script, c, false);
  const MultiturnRun on = run_multiturn(*device_, *bundle_->tokenizer, script, c, true);
  ASSERT_EQ(on.turns.size(), 4u);  // a1, b1, a2, a3 (turns interleave across sessions)
  EXPECT_TRUE(same_replies(off, on));
  EXPECT_EQ(on.turns[1].session, "b");
  EXPECT_EQ(off.metrics.prefill_tokens_skipped, 0);
  EXPECT_EQ(off.metrics.hits, 0);
  EXPECT_GT(on.metrics.hits, 0);
  EXPECT_GT(on.metrics.prefill_tokens_skipped, 0);
  EXPECT_LT(on.rows_computed, off.rows_computed);

  // What the cache must hold, from the rules alone (blocks of 4). Session b's first prompt
  // is BOS + "Tell a short story." (20 tokens) + "\nQ: A dog?\nA:": it shares the system
  // prompt and the template's "\nQ: " with session a's first turn — 24 tokens, 6 full blocks.
  // Turn t+1 of session a finds every full block of what turn t fed through the model: its
  // prompt and every generated token but the last.
  EXPECT_EQ(on.turns[1].cached_tokens, 24);
  for (int i : {2, 3}) {
    const TurnRecord& prev = on.turns[std::size_t(i == 2 ? 0 : 2)];
    ASSERT_EQ(int(prev.reply.size()), c.max_new_tokens) << "a reply stopped early";
    const int fed = prev.prompt_tokens + c.max_new_tokens - 1;
    EXPECT_EQ(on.turns[std::size_t(i)].cached_tokens, fed / c.block_size * c.block_size);
    EXPECT_EQ(off.turns[std::size_t(i)].cached_tokens, 0);
  }
  for (const TurnRecord& t : on.turns) {
    EXPECT_EQ(t.cached_tokens + t.computed_tokens, t.prompt_tokens);
  }
}

TEST_F(Ch02Scenarios, MultiturnStopsASessionAtTheContextAndSaysSo) {
  // BOS + 230 bytes of system prompt + "\nQ: A cat?\nA:" (13) = 244 tokens; with 8 new ones
  // turn 1 fits the 256-token context, turn 2 (244 + 8 + 12 + 8) does not.
  const ChatScript script = parse_chat_script(
      "system: " + std::string(230, 'x') + "\nsession: a\nuser: A cat?\nuser: Then?\n"
      "session: b\nuser: A dog?\n", "test");
  MultiturnConfig c;
  c.max_new_tokens = 8;
  const MultiturnRun r = run_multiturn(*device_, *bundle_->tokenizer, script, c, true);
  ASSERT_EQ(r.turns.size(), 2u);  // a1 and b1
  EXPECT_EQ(r.turns[1].session, "b");
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("session 'a' stopped before turn 2"), std::string::npos) << r.notes[0];
}

// A 20-token prompt in blocks of 16: one full block and a partial one holding 4 tokens.
// Unshared: 3 × 2 blocks. Shared: the 2 blocks once; the first decode step copies the partial
// block for samples 0 and 1, and sample 2, then its only owner, writes in place: 4 blocks,
// 2 copies. 20 + 5 fed-back positions stay within 2 blocks.
TEST_F(Ch02Scenarios, ParallelSamplingSharesThePromptAndSamplesTheSameTokens) {
  ParallelSamplingConfig c;
  c.n = 3;
  c.max_new_tokens = 6;
  c.block_size = 16;
  c.num_blocks = 32;
  c.temperature = 1.0f;
  c.top_p = 1.0f;
  std::vector<int> prompt;
  for (int i = 0; i < 20; ++i) prompt.push_back((29 * i + 7) % 256);
  const ParallelSamplingRun unshared = run_parallel_sampling(*device_, prompt, c, false);
  const ParallelSamplingRun shared = run_parallel_sampling(*device_, prompt, c, true);
  EXPECT_EQ(shared.samples, unshared.samples);
  ASSERT_EQ(shared.samples.size(), 3u);
  EXPECT_NE(shared.samples[0], shared.samples[1]);  // different seeds, different samples
  EXPECT_EQ(unshared.prompt_blocks, 6);
  EXPECT_EQ(unshared.peak_blocks, 6);
  EXPECT_EQ(unshared.block_copies, 0);
  EXPECT_EQ(unshared.prefill_rows, 60);
  EXPECT_EQ(shared.prompt_blocks, 2);
  EXPECT_EQ(shared.peak_blocks, 4);
  EXPECT_EQ(shared.block_copies, 2);
  EXPECT_EQ(shared.prefill_rows, 20);
  EXPECT_EQ(shared.decode_steps, 5);
}

TEST_F(Ch02Scenarios, ParallelSamplingReportsAFullPoolClearly) {
  ParallelSamplingConfig c;
  c.n = 4;
  c.max_new_tokens = 4;
  c.num_blocks = 5;  // unshared needs 4 × 2 blocks for a 20-token prompt
  const std::vector<int> prompt(20, 65);
  try {
    run_parallel_sampling(*device_, prompt, c, false);
    ADD_FAILURE() << "a 3-block pool held 4 prompts";
  } catch (const engine::BlockPoolExhausted& e) {
    EXPECT_NE(std::string(e.what()).find("free blocks"), std::string::npos) << e.what();
  }
  // Shared: the 2 prompt blocks, then 3 copies of the partial one (the 4th sample writes in
  // place) — exactly the 5 blocks there are.
  EXPECT_NO_THROW(run_parallel_sampling(*device_, prompt, c, true));
}

}  // namespace
}  // namespace nanoserve::ch02
