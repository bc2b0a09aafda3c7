// Static batching (chapter 3): batches in arrival order, padding and idle-row waste counted
// exactly, batch start policy, worst-case KV reservation, rejections.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "common/harness/fake_executor.h"
#include "common/engine/serve/static_batcher.h"
#include "common/error.h"

namespace nanoserve {
namespace {

constexpr int kVocab = 50;

/// A greedy request whose prompt is `prompt_len` copies of a token unique to it.
engine::Request req(int64_t id, int prompt_len, int max_tokens, double arrival_s = 0) {
  return engine::make_request(id, std::vector<int>(size_t(prompt_len), 2 + int(id)), max_tokens,
                      SamplingParams{0.0f}, arrival_s);
}

engine::StaticBatchConfig config(int batch_size, int num_blocks = 64) {
  engine::StaticBatchConfig c;
  c.batch_size = batch_size;
  c.num_kv_blocks = num_blocks;
  c.block_size = 4;
  c.max_model_len = 64;
  return c;
}

// Prompts 2, 5, 3 and max_tokens 1, 4, 2 in one batch (no stop tokens):
//   prefill: 10 useful rows + padding 3 + 0 + 2 = 5         (left-padded to 5)
//   decode:  step 2: B, C useful, A idle   step 3 and 4: B useful, A and C idle
TEST(Ch03StaticBatcher, CountsPaddingAndIdleSlotsExactly) {
  engine::SimulatedClock clock;
  harness::FakeExecutor ex(64, 4, kVocab, &clock, harness::FakeCostModel{1.0, 0.1});
  const engine::ServingRun run = engine::run_static({req(0, 2, 1), req(1, 5, 4), req(2, 3, 2)}, config(3), ex,
                                    clock);
  EXPECT_EQ(run.waste.useful_rows, 10 + 2 + 1 + 1);
  EXPECT_EQ(run.waste.padding_rows, 5);
  EXPECT_EQ(run.waste.idle_rows, 1 + 2 + 2);
  EXPECT_DOUBLE_EQ(run.waste.waste_fraction(), 10.0 / 24.0);
  ASSERT_EQ(run.steps.size(), 4u);
  // Each pass costs 1 s + 0.1 s per row, wasted rows included: 15, 3, 3, 3 rows.
  const std::vector<double> times = {2.5, 3.8, 5.1, 6.4};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_NEAR(run.steps[i].time_s, times[i], 1e-12);
    EXPECT_EQ(run.steps[i].kv_blocks_used, 4);  // 1 + 2 + 1 blocks, kept until the batch ends
  }
  EXPECT_EQ(run.steps[1].num_wasted_rows, 1);
  EXPECT_EQ(run.kv.blocks_in_use, 0);
  ASSERT_EQ(run.requests.size(), 3u);
  EXPECT_NEAR(run.requests[0].finished_s, 2.5, 1e-12);  // done early, but its batch row idles on
  EXPECT_NEAR(run.requests[2].finished_s, 3.8, 1e-12);
  EXPECT_NEAR(run.requests[1].finished_s, 6.4, 1e-12);
  for (const engine::Request& r : run.requests) {
    EXPECT_EQ(r.seq.token_ids, harness::fake_reference_run(req(r.id(), r.prompt_len, r.max_tokens), kVocab,
                                                   64).seq.token_ids);
    EXPECT_NEAR(r.token_times_s.front(), 2.5, 1e-12);
  }
}

TEST(Ch03StaticBatcher, WaitsForAFullBatchAndTheNextBatchWaitsForTheWholePrevious) {
  engine::SimulatedClock clock;
  harness::FakeExecutor ex(64, 4, kVocab, &clock, harness::FakeCostModel{1.0, 0.0});
  const engine::ServingRun run = engine::run_static(
      {req(0, 2, 2, 0.0), req(1, 2, 2, 1.0), req(2, 2, 2, 5.0), req(3, 2, 2, 6.0)}, config(2),
      ex, clock);
  const std::vector<double> start = {1.0, 1.0, 6.0, 6.0};  // full at 1; full at 6
  const std::vector<double> end = {3.0, 3.0, 8.0, 8.0};    // prefill + one decode step
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_DOUBLE_EQ(run.requests[i].first_scheduled_s, start[i]) << i;
    EXPECT_DOUBLE_EQ(run.requests[i].finished_s, end[i]) << i;
  }
}

TEST(Ch03StaticBatcher, MaxWaitStartsAPartialBatch) {
  engine::SimulatedClock clock;
  harness::FakeExecutor ex(64, 4, kVocab, &clock, harness::FakeCostModel{1.0, 0.0});
  engine::StaticBatchConfig c = config(2);
  c.max_wait_s = 0.5;
  const engine::ServingRun run = engine::run_static(
      {req(0, 2, 2, 0.0), req(1, 2, 2, 1.0), req(2, 2, 2, 5.0), req(3, 2, 2, 6.0)}, c, ex,
      clock);
  // Batch {0} at 0.5; {1} when that one ends (2.5); {2} at 5 + 0.5; {3} when that ends.
  const std::vector<double> start = {0.5, 2.5, 5.5, 7.5};
  for (size_t i = 0; i < 4; ++i) EXPECT_DOUBLE_EQ(run.requests[i].first_scheduled_s, start[i]);
}

TEST(Ch03StaticBatcher, ABatchClosesEarlyWhenWorstCaseKVNoLongerFits) {
  engine::SimulatedClock clock;
  harness::FakeExecutor ex(4, 4, kVocab, &clock, harness::FakeCostModel{1.0, 0.0});
  // Each request may write 4 + 5 - 1 = 8 tokens: 2 blocks; the pool of 4 takes two of them.
  const engine::ServingRun run =
      engine::run_static({req(0, 4, 5), req(1, 4, 5), req(2, 4, 5)}, config(3, 4), ex, clock);
  EXPECT_DOUBLE_EQ(run.requests[0].first_scheduled_s, 0.0);
  EXPECT_DOUBLE_EQ(run.requests[1].first_scheduled_s, 0.0);
  EXPECT_DOUBLE_EQ(run.requests[2].first_scheduled_s, 5.0);  // after 5 steps of batch 1
  EXPECT_EQ(run.requests[2].num_output_tokens(), 5);
}

TEST(Ch03StaticBatcher, RejectsWhatCanNeverFitAndRunsTheRest) {
  engine::SimulatedClock clock;
  harness::FakeExecutor ex(4, 4, kVocab, &clock);
  const engine::ServingRun run =
      engine::run_static({req(0, 65, 1), req(1, 4, 100), req(2, 3, 2)}, config(3, 4), ex, clock);
  EXPECT_EQ(run.requests[0].finish_reason, engine::FinishReason::kRejected);
  EXPECT_EQ(run.requests[0].finish_detail,
            "prompt of 65 tokens is longer than the context (max_model_len = 64)");
  EXPECT_EQ(run.requests[1].finish_reason, engine::FinishReason::kRejected);
  EXPECT_EQ(run.requests[1].finish_detail,
            "prompt + max_tokens may need 16 KV blocks, reserved up front by static batching, "
            "but the whole pool has 4");
  EXPECT_EQ(run.requests[2].finish_reason, engine::FinishReason::kLength);
  EXPECT_EQ(run.requests[2].num_output_tokens(), 2);
}

TEST(Ch03StaticBatcher, WorstCaseBlocksCountPromptPlusAllButTheLastToken) {
  EXPECT_EQ(engine::worst_case_blocks(req(0, 5, 4), 64, 4), 2);   // 8 tokens written
  EXPECT_EQ(engine::worst_case_blocks(req(0, 5, 5), 64, 4), 3);   // 9
  EXPECT_EQ(engine::worst_case_blocks(req(0, 1, 1), 64, 4), 1);   // the prompt only
  EXPECT_EQ(engine::worst_case_blocks(req(0, 8, 10), 8, 4), 2);   // a full context gets one token
  EXPECT_EQ(engine::worst_case_blocks(req(0, 4, 100), 10, 4), 3);  // cut by the context: 9 written
}

TEST(Ch03StaticBatcher, RejectsABadConfigAndDuplicateIds) {
  engine::SimulatedClock clock;
  harness::FakeExecutor ex(4, 4, kVocab, &clock);
  engine::StaticBatchConfig c = config(0);
  EXPECT_THROW(engine::run_static({req(0, 2, 2)}, c, ex, clock), InvalidArgument);
  c = config(2);
  c.max_wait_s = std::nan("");
  EXPECT_THROW(engine::run_static({req(0, 2, 2)}, c, ex, clock), InvalidArgument);
  EXPECT_THROW(engine::run_static({req(0, 2, 2), req(0, 3, 2)}, config(2), ex, clock), InvalidArgument);
}

}  // namespace
}  // namespace nanoserve
