// Examples of use of the chapter-7 engine types (common/engine/): drafters, the engine's
// executor, parallel sampling, swap preemption. Each TEST is one example: the code between its
// `//! [Name]` markers is what the type's documentation shows (Doxygen \snippet), and the
// test asserts what the example claims, so the documentation cannot go stale.
#include <gtest/gtest.h>

#include <vector>

#include "common/engine/serve/drafter.h"
#include "common/engine/serve/scheduler.h"

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

}  // namespace
}  // namespace nanoserve::engine
