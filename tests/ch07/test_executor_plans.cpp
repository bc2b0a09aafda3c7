// One executor for every plan the scheduler makes (common/engine/serve/model_executor.h):
// speculative verification next to CUDA graphs of pure decode steps, a step cut into several
// passes without cutting a verification, log-probabilities of verified and forked tokens, and
// the plans it refuses before anything runs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ch01/engine_test_support.h"
#include "ch04/model_test_support.h"
#include "ch07/stack_test_support.h"
#include "common/engine/serve/model_executor.h"
#include "common/engine/serve/serving_loop.h"
#include "common/error.h"
#include "test_support.h"

namespace nanoserve::engine {
namespace {

using nanoserve::testing::expect_solo_tokens;
using nanoserve::testing::solo_tokens;

constexpr int kMaxModelLen = 64;

SchedulerConfig config_of(int budget) {
  SchedulerConfig c;
  c.max_num_seqs = 4;
  c.max_num_batched_tokens = budget;
  c.max_model_len = kMaxModelLen;
  c.num_kv_blocks = 64;
  c.block_size = 4;
  return c;
}

// Greedy requests of the micro model (its text loops: prompt lookup finds drafts), half of
// them speculating.
std::vector<Request> greedy_requests(int vocab) {
  std::vector<Request> requests = testing::model_workload(21, 4, vocab, 10, 12);
  for (Request& r : requests) {
    r.seq.sampling.temperature = 0.0f;
    r.stop_token_ids.clear();
    r.max_tokens = 12;
    r.num_speculative_tokens = r.id() % 2 == 0 ? 3 : 0;
  }
  return requests;
}

class Ch07ExecutorPlans : public ::testing::Test {
 protected:
  void SetUp() override { NANOSERVE_REQUIRE_DEVICE(); }
  const Model host_ = testing::micro_model(5, 2);
  const DeviceModel model_{host_, DType::kF32};
};

// Steps that verify drafts launch kernel by kernel; steps where every sequence decodes one
// token replay their bucket's graph — in the same run, with every greedy token the solo one,
// graphs on or off.
TEST_F(Ch07ExecutorPlans, DecodeStepsReplayGraphsWhileVerificationsRunEagerly) {
  const std::vector<Request> requests = greedy_requests(host_.config.vocab_size);
  const std::vector<std::vector<int>> solo = solo_tokens(model_, requests, kMaxModelLen);
  const SchedulerConfig config = config_of(32);
  for (bool graphs : {true, false}) {
    ModelExecutorOptions o = executor_options_for(config, 3);
    o.cuda_graphs = graphs;
    ModelExecutor executor(model_, o);
    NgramDrafter drafter;
    SimulatedClock clock;
    const ServingRun run = run_continuous(requests, config, executor, clock, {}, &drafter);
    const std::string what = graphs ? "graphs" : "eager";
    expect_solo_tokens(run, solo, what);
    EXPECT_GT(run.num_draft_tokens, 0) << what;
    long long verifying_steps = 0;
    for (const StepSample& s : run.steps) verifying_steps += s.num_draft_rows > 0;
    const StepCounters c = executor.counters();
    EXPECT_EQ(c.passes, static_cast<long long>(run.steps.size())) << what;
    EXPECT_GE(c.eager_passes, verifying_steps) << what << ": a verification is not a decode step";
    if (graphs) {
      EXPECT_GT(c.graph_replays, 0) << "pure decode steps replay graphs";
    } else {
      EXPECT_EQ(c.graph_replays + c.graph_captures, 0);
    }
  }
}

// An executor whose buffers hold less than the scheduler's step cuts it into passes: a
// prompt across passes, but a verification's 1 + k logit rows always in one (they are decided
// together).
TEST_F(Ch07ExecutorPlans, AStepLargerThanThePassIsCutWithoutCuttingAVerification) {
  const std::vector<Request> requests = greedy_requests(host_.config.vocab_size);
  const std::vector<std::vector<int>> solo = solo_tokens(model_, requests, kMaxModelLen);
  const SchedulerConfig config = config_of(32);
  ModelExecutorOptions o = executor_options_for(config, 3);
  o.max_tokens_per_step = 6;  // a verification of 3 drafts is 4 rows: at most one per pass
  o.max_logit_rows = 5;
  ModelExecutor executor(model_, o);
  NgramDrafter drafter;
  SimulatedClock clock;
  const ServingRun run = run_continuous(requests, config, executor, clock, {}, &drafter);
  expect_solo_tokens(run, solo, "passes of 6 rows");
  EXPECT_GT(run.num_draft_tokens, 0);
  EXPECT_GT(executor.counters().passes, static_cast<long long>(run.steps.size()));
  EXPECT_EQ(executor.stats().draft_rows, run.num_draft_tokens);
}

// Log-probabilities come with every emitted entry: a verification's accepted drafts and the
// token after them (each from its own row: greedy, so each is its row's most likely token),
// and each forked sample's first token from the shared row.
TEST_F(Ch07ExecutorPlans, LogprobsOfVerifiedAndForkedTokens) {
  const SchedulerConfig config = config_of(32);
  for (bool device_sampling : {true, false}) {
    ModelExecutorOptions o = executor_options_for(config, 3);
    o.device_sampling = device_sampling;
    ModelExecutor executor(model_, o);
    Scheduler scheduler(config);
    Request spec = make_request(0, {1, 4, 7, 1, 4}, 12, SamplingParams{0.0f});
    spec.num_speculative_tokens = 3;
    spec.num_logprobs = 2;
    Request group = make_request(1, {1, 9, 3}, 4, SamplingParams{0.8f, 0, 1.0f, 0.0f, 77});
    group.n = 3;
    group.num_logprobs = 0;
    scheduler.add_request(spec);
    scheduler.add_request(group);
    NgramDrafter drafter;
    long long verified = 0, forked = 0;
    while (scheduler.has_unfinished()) {
      const SchedulerOutput out = scheduler.schedule();
      const std::vector<int> entries = executor.execute(out);
      const std::vector<TokenLogprobs> lp = executor.take_logprobs();
      std::size_t k = 0;
      for (const ScheduledSequence& s : out.seqs) {
        for (int j = 0; j < s.num_sampled_tokens(); ++j, ++k) {
          ASSERT_LT(k, lp.size());
          if (entries[k] < 0) {
            EXPECT_LT(lp[k].token, 0) << "-1 padding gets no logprobs";
            continue;
          }
          EXPECT_EQ(lp[k].token, entries[k]);
          EXPECT_LT(lp[k].logprob, 0.0f);
          if (s.seq_id == 0) {  // greedy: the row's most likely token
            ASSERT_EQ(lp[k].top.size(), 2u);
            EXPECT_EQ(lp[k].top[0].first, entries[k]);
            verified += s.num_draft_tokens > 0;
          }
        }
        forked += static_cast<long long>(s.forks.size());
      }
      scheduler.update(out, entries);
      scheduler.propose_drafts(drafter);
    }
    EXPECT_GT(verified, 0) << "some verification emitted tokens";
    EXPECT_EQ(forked, 2) << "the group forked its two samples";
  }
}

// Plans the executor cannot carry out are refused by name before anything runs: no pass, no
// swap, no block touched.
TEST_F(Ch07ExecutorPlans, RefusesAPlanItCannotCarryOutBeforeRunningIt) {
  ModelExecutorOptions o;
  o.max_tokens_per_step = 16;
  o.max_logit_rows = 2;
  o.num_kv_blocks = 8;
  o.block_size = 4;
  ModelExecutor executor(model_, o);  // no host pool
  KVCacheManager kv(8, 4, false);
  Request r = make_request(0, {1, 2, 3}, 4);
  kv.allocate(r.seq);
  const auto refused = [&](const SchedulerOutput& out, const std::string& needle) {
    try {
      executor.execute(out);
      ADD_FAILURE() << "accepted a plan that should be refused for '" << needle << "'";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
    EXPECT_EQ(executor.counters().passes, 0) << needle;
    EXPECT_EQ(executor.stats().blocks_swapped_out, 0) << needle;
  };
  SchedulerOutput swaps;
  swaps.add(r, kv.block_table(0), 0, 3);
  swaps.blocks_to_swap_out.push_back({5, 0});
  refused(swaps, "no host pool");

  Request drafted = r;
  drafted.draft.tokens = {7, 8};
  SchedulerOutput too_many;  // 1 + 2 logit rows > max_logit_rows = 2
  KVCacheManager kv2(8, 4, false);
  kv2.allocate(drafted.seq);
  kv2.append_slots(drafted.seq, 0, 2);
  too_many.add(drafted, kv2.block_table(0), 0, 3, 2);
  refused(too_many, "max_logit_rows = 2");

  SchedulerOutput beyond = too_many;  // 2 drafts verified, 1 carried
  drafted.draft.tokens = {7};
  refused(beyond, "verifies 2 drafts but carries 1");

  SchedulerOutput quiet;  // drafts after a prompt chunk that does not sample
  quiet.add(r, kv.block_table(0), 0, 2);
  quiet.seqs[0].num_draft_tokens = 1;
  refused(quiet, "does not sample");

  SchedulerOutput forks;  // forks of a row that does not sample
  forks.add(r, kv.block_table(0), 0, 2);
  forks.seqs[0].forks.push_back(&r);
  refused(forks, "forks 1 samples from a run that does not sample");

  SchedulerOutput wasted;
  wasted.add(r, kv.block_table(0), 0, 3);
  wasted.num_wasted_rows = -1;
  refused(wasted, "num_wasted_rows = -1");
}

}  // namespace
}  // namespace nanoserve::engine
