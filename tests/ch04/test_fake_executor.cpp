// FakeExecutor: the fake model is a pure function of (context, seed, position), its fake KV
// catches wrong tables, and its cost model drives the virtual clock.
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "common/harness/fake_executor.h"
#include "common/engine/kv/kv_cache_manager.h"
#include "common/error.h"
#include "sched_test_support.h"

namespace nanoserve {
namespace {

using testing::req;

constexpr int kVocab = 50;

TEST(Ch04FakeModel, GreedyTokensIgnoreTheSeedAndSampledOnesDependOnIt) {
  const std::vector<int> ctx = {3, 1, 4, 1, 5};
  SamplingParams greedy{0.0f};
  SamplingParams a{1.0f}, b{1.0f};
  a.seed = 1;
  b.seed = 2;
  greedy.seed = 1;
  const int g1 = harness::fake_next_token(greedy, ctx.data(), 5, kVocab);
  greedy.seed = 2;
  EXPECT_EQ(harness::fake_next_token(greedy, ctx.data(), 5, kVocab), g1);
  // Over many contexts, two seeds must disagree somewhere (a seed that does nothing would not).
  int differ = 0;
  for (int t = 0; t < 20; ++t) {
    const std::vector<int> c = {t, t + 1};
    differ += harness::fake_next_token(a, c.data(), 2, kVocab) != harness::fake_next_token(b, c.data(), 2, kVocab);
  }
  EXPECT_GT(differ, 10);
}

TEST(Ch04FakeModel, EveryTokenOfTheContextMatters) {
  const SamplingParams greedy{0.0f};
  std::vector<int> ctx = {7, 7, 7, 7, 7, 7, 7, 7};
  const int base = harness::fake_next_token(greedy, ctx.data(), 8, 1 << 30);
  for (size_t i = 0; i < ctx.size(); ++i) {
    std::vector<int> changed = ctx;
    changed[i] = 8;
    EXPECT_NE(harness::fake_next_token(greedy, changed.data(), 8, 1 << 30), base) << "position " << i;
  }
}

TEST(Ch04FakeModel, ReferenceRunAppliesTheStopRules) {
  engine::Request r = req(0, 5, 7);
  const engine::Request done = harness::fake_reference_run(r, kVocab, 64);
  EXPECT_EQ(done.num_output_tokens(), 7);
  EXPECT_EQ(done.finish_reason, engine::FinishReason::kLength);
  std::vector<int> tokens = r.seq.token_ids;  // replay by hand
  for (int i = 0; i < 7; ++i) {
    tokens.push_back(harness::fake_next_token(r.seq.sampling, tokens.data(), int(tokens.size()), kVocab));
  }
  EXPECT_EQ(done.seq.token_ids, tokens);
}

TEST(Ch04FakeExecutor, ReadsBackWhatTheSchedulersSlotsWroteAndAdvancesTheClock) {
  engine::SimulatedClock clock;
  harness::FakeExecutor ex(16, 4, kVocab, &clock, harness::FakeCostModel{1.0, 0.5});
  engine::SchedulerConfig c = testing::tiny_config(16, 4, 32);
  c.enable_prefix_caching = true;
  engine::Scheduler s(c);
  // Two identical prompts in one step: the second hits the first's block, written by the
  // same pass — the executor writes every row before any sequence reads.
  engine::Request a = req(0, 9, 3);
  engine::Request b = a;
  b.seq.seq_id = 1;
  s.add_request(a);
  s.add_request(b);
  const engine::SchedulerOutput out = s.schedule();
  EXPECT_EQ(testing::describe(out), "0@0+9! 1@8+1!");
  const std::vector<int> tokens = ex.execute(out);
  EXPECT_DOUBLE_EQ(clock.now(), 1.0 + 0.5 * 10);
  const engine::Request ref = harness::fake_reference_run(a, kVocab, 64);
  EXPECT_EQ(tokens, (std::vector<int>{ref.seq.token_ids[9], ref.seq.token_ids[9]}));
  s.update(out, tokens, clock.now());
  EXPECT_EQ(ex.num_steps(), 1);
  EXPECT_EQ(ex.num_rows(), 10);
}

TEST(Ch04FakeExecutor, AWrongBlockTableIsCaughtNotSilentlyRead) {
  engine::KVCacheManager kv(8, 4, false);
  engine::Request a = req(0, 6, 3);
  engine::Request b = req(1, 6, 3);
  kv.allocate(a.seq);
  kv.allocate(b.seq);
  harness::FakeExecutor ex(8, 4, kVocab);
  engine::SchedulerOutput prefill;
  prefill.add(a, kv.block_table(0), 0, 6);
  ex.execute(prefill);  // only a's KV is written
  engine::SchedulerOutput wrong;
  wrong.add(b, kv.block_table(1), 0, 6);
  wrong.seqs[0].block_table = &kv.block_table(0);  // b's rows, a's table
  EXPECT_THROW(ex.execute(wrong), std::logic_error);
  engine::SchedulerOutput unwritten;
  unwritten.add(b, kv.block_table(1), 0, 6);
  unwritten.seqs[0].start_pos = 5;  // claims positions 0..4 were computed: they never were
  unwritten.seqs[0].num_tokens = 1;
  unwritten.input_ids = {b.seq.token_ids[5]};
  unwritten.positions = {5};
  unwritten.slot_mapping = {kv.block_table(1).slot(5)};
  EXPECT_THROW(ex.execute(unwritten), std::logic_error);
}

TEST(Ch04FakeExecutor, RejectsNonPositiveSizes) {
  EXPECT_THROW(harness::FakeExecutor(0, 4, 10), InvalidArgument);
  EXPECT_THROW(harness::FakeExecutor(4, 4, 0), InvalidArgument);
}

}  // namespace
}  // namespace nanoserve
