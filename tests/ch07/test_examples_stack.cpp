// Examples of use of the chapter-7 engine types (common/engine/): drafters, the engine's
// executor, parallel sampling, swap preemption. Each TEST is one example: the code between its
// `//! [Name]` markers is what the type's documentation shows (Doxygen \snippet), and the
// test asserts what the example claims, so the documentation cannot go stale.
#include <gtest/gtest.h>

#include <vector>

#include "ch01/engine_test_support.h"
#include "ch07/stack_test_support.h"
#include "common/engine/serve/draft_model_drafter.h"
#include "common/engine/serve/drafter.h"
#include "common/engine/serve/engine_executor.h"
#include "common/engine/serve/scheduler.h"
#include "common/engine/serve/serving_loop.h"
#include "common/speculative/draft_models.h"

namespace nanoserve::engine {
namespace {

using Ids = std::vector<int>;

TEST(Ch07Examples, Drafter) {
  //! [Drafter]
  SchedulerConfig config;
  config.num_kv_blocks = 8;
  config.block_size = 4;
  Scheduler scheduler(config);
  // A prompt that repeats itself: prompt lookup guesses that "7 8" is followed by "9 5".
  Request r = make_request(0, {1, 7, 8, 9, 5, 7, 8}, /*max_tokens=*/8, SamplingParams{0.0f});
  r.num_speculative_tokens = 2;  // γ of this request
  scheduler.add_request(r);
  SchedulerOutput step = scheduler.schedule();  // the prompt
  scheduler.update(step, {9});                  // its first token: ... 7 8 9

  NgramDrafter drafter;                // between steps, drafts for every speculating request
  scheduler.propose_drafts(drafter);   // "7 8 9" was followed by "5 7" earlier
  EXPECT_EQ(scheduler.request(0).draft.tokens, (Ids{5, 7}));

  step = scheduler.schedule();         // the last token and both drafts, in one pass
  EXPECT_EQ(step.input_ids, (Ids{9, 5, 7}));
  EXPECT_EQ(step.num_sampled(), 3);    // one entry per logit row
  // The executor verifies (rejection sampling): 5 kept, 7 rejected and replaced by 3.
  scheduler.update(step, {5, 3, -1});
  EXPECT_EQ(scheduler.request(0).output_tokens(), (Ids{9, 5, 3}));
  EXPECT_EQ(scheduler.stats().num_accepted_tokens, 1);
  //! [Drafter]
}

TEST(Ch07Examples, EngineExecutor) {
  NANOSERVE_REQUIRE_DEVICE();
  const Model host = testing::micro_model(3);  // any Model: stories260K, synthetic, …
  const DeviceModel model(host, DType::kF32);
  //! [EngineExecutor]
  SchedulerConfig config;
  config.max_num_batched_tokens = 32;
  config.max_model_len = 48;
  config.num_kv_blocks = 16;
  config.block_size = 4;
  // Buffers for one step of `config` in one pass, verifying up to 3 drafts per request.
  EngineExecutor executor(model, engine_executor_options_for(config, /*max_gamma=*/3));
  Request r = make_request(0, {1, 4, 7, 1, 4}, /*max_tokens=*/6, SamplingParams{0.0f});
  r.num_speculative_tokens = 3;
  NgramDrafter drafter;
  SimulatedClock clock;
  const ServingRun run = run_continuous({r}, config, executor, clock, {}, &drafter);
  EXPECT_EQ(run.requests[0].num_output_tokens(), 6);
  EXPECT_EQ(executor.stats().passes, static_cast<long long>(run.steps.size()));  // 1 per step
  EXPECT_EQ(executor.stats().draft_rows, run.num_draft_tokens);
  //! [EngineExecutor]
}

TEST(Ch07Examples, DraftModelDrafter) {
  NANOSERVE_REQUIRE_DEVICE();
  const Model target_host = testing::micro_model(3, 2);
  const DeviceModel target(target_host, DType::kF32);
  //! [DraftModelDrafter]
  // The target's first block as the draft (chapter 6's early exit), with a pool of its own.
  const DeviceModel draft(speculative::first_layers(target_host, 1), DType::kF32);
  DraftModelDrafterOptions options;
  options.num_kv_blocks = 32;
  options.block_size = 4;
  DraftModelDrafter drafter(draft, target_host.config.vocab_size, options);

  SchedulerConfig config;
  config.num_kv_blocks = 32;
  config.block_size = 4;
  config.max_model_len = 48;
  EngineExecutor executor(target, engine_executor_options_for(config, 2));
  std::vector<Request> requests;
  for (int i = 0; i < 3; ++i) {
    requests.push_back(make_request(i, {1, 2 + i, 3}, /*max_tokens=*/5, SamplingParams{0.0f}));
    requests.back().num_speculative_tokens = 2;
  }
  SimulatedClock clock;
  const ServingRun run = run_continuous(requests, config, executor, clock, {}, &drafter);
  EXPECT_GT(run.num_draft_tokens, 0);
  EXPECT_GT(drafter.stats().passes, 0);        // batched: all requests in each draft pass
  EXPECT_EQ(drafter.kv().num_sequences(), 0);  // finished requests' draft KV is freed
  //! [DraftModelDrafter]
}

}  // namespace
}  // namespace nanoserve::engine
