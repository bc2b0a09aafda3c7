// Property test of the whole engine's scheduling (chapter 7): hundreds of random scenarios —
// random configs, arrivals, lengths, shared prefixes and stop tokens, per-request γ (0
// included) with drafts that are right for a while and then wrong, parallel samples, KV pools
// small enough to force preemption by recompute or by swapping to a host pool (itself too
// small now and then) — driven step by step with the fake model. After every step the
// scheduler's and the block manager's invariants hold and the token budget is kept; at the
// end every request is finished, no block (device or host) is leaked, and every request's tokens are exactly
// what it produces alone (a sample: the request alone with its seed).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "ch07/stack_test_support.h"
#include "common/harness/fake_executor.h"

namespace nanoserve {
namespace {

using nanoserve::testing::Draws;
constexpr int kVocab = 16;

struct Scenario {
  engine::SchedulerConfig config;
  std::vector<engine::Request> requests;
  std::vector<int> arrival_step;
};

Scenario random_scenario(std::uint64_t seed) {
  Draws d{seed};
  Scenario s;
  engine::SchedulerConfig& c = s.config;
  c.block_size = std::vector<int>{1, 2, 3, 4, 8}[std::size_t(d.uniform(0, 4))];
  c.max_model_len = d.uniform(6, 40);
  c.num_kv_blocks = d.uniform(1, 60 / c.block_size + 2);
  c.max_num_seqs = d.uniform(1, 8);
  c.enable_chunked_prefill = d.chance(70);
  c.max_num_batched_tokens = d.uniform(1, 48);
  if (!c.enable_chunked_prefill) c.max_num_batched_tokens += c.max_model_len;
  c.enable_prefix_caching = d.chance(60);
  c.preemption_mode = std::vector<engine::PreemptionMode>{
      engine::PreemptionMode::kRecompute, engine::PreemptionMode::kSwap,
      engine::PreemptionMode::kAuto}[std::size_t(d.uniform(0, 2))];
  c.num_host_blocks = d.uniform(c.preemption_mode == engine::PreemptionMode::kSwap ? 1 : 0,
                                c.num_kv_blocks + 2);  // too small, now and then
  std::vector<int> system_prompt;
  for (int i = d.uniform(1, 12); i > 0; --i) system_prompt.push_back(d.uniform(1, kVocab - 1));
  const int n = d.uniform(1, 16);
  for (int i = 0; i < n; ++i) {
    std::vector<int> prompt;
    if (d.chance(50)) prompt = system_prompt;
    for (int k = d.uniform(prompt.empty() ? 1 : 0, c.max_model_len); k > 0; --k) {
      prompt.push_back(d.uniform(0, kVocab - 1));
    }
    SamplingParams sampling{d.chance(50) ? 0.0f : 1.0f};
    sampling.seed = std::uint64_t(d.uniform(0, 3));
    engine::Request r = engine::make_request(i, prompt, d.uniform(1, 20), sampling);
    r.num_speculative_tokens = d.chance(25) ? 0 : d.uniform(1, 5);
    r.n = d.chance(30) ? d.uniform(2, 3) : 1;  // parallel samples
    if (d.chance(50)) r.stop_token_ids = {0};
    s.requests.push_back(r);
    s.arrival_step.push_back(d.uniform(0, 20));
  }
  return s;
}

/// What the scenarios exercised, so the test can prove it is not vacuous.
struct Coverage {
  long long completed = 0, preemptions = 0, drafts = 0, accepted = 0, rejected_rounds = 0,
            prefix_hits = 0, capacity = 0, samples = 0, swaps = 0;
};

void run_scenario(std::uint64_t seed, Coverage& cov) {
  SCOPED_TRACE("scenario seed " + std::to_string(seed));
  const Scenario sc = random_scenario(seed);
  const engine::SchedulerConfig& c = sc.config;
  engine::Scheduler s(c);
  harness::FakeExecutor ex(c.num_kv_blocks, c.block_size, kVocab);
  testing::FakeModelDrafter drafter(kVocab);
  std::vector<engine::Request> finished;
  std::size_t added = 0;
  for (int t = 0;; ++t) {
    ASSERT_LT(t, 10000) << "no progress";
    for (std::size_t i = 0; i < sc.requests.size(); ++i) {
      if (sc.arrival_step[i] == t) {
        s.add_request(sc.requests[i]);
        ++added;
      }
    }
    if (!s.has_unfinished()) {
      if (added == sc.requests.size()) break;
      continue;
    }
    const engine::SchedulerOutput out = testing::spec_step(s, ex, &drafter, double(t));
    EXPECT_LE(out.num_batched_tokens(), c.max_num_batched_tokens);
    EXPECT_LE(s.num_running(), c.max_num_seqs);
    if (::testing::Test::HasFailure()) return;
    for (engine::Request& r : s.take_finished()) finished.push_back(std::move(r));
  }
  for (engine::Request& r : s.take_finished()) finished.push_back(std::move(r));
  EXPECT_EQ(s.kv().pool().num_free_blocks(), c.num_kv_blocks) << "leaked blocks";
  EXPECT_EQ(s.kv().host_pool().num_free_blocks(), c.num_host_blocks) << "leaked host blocks";
  cov.swaps += s.stats().num_swap_outs;
  EXPECT_EQ(s.kv().num_sequences(), 0);
  std::size_t expected = 0;  // every sample of every request, or the request alone
  for (const engine::Request& r : finished) expected += r.sample_index == 0;
  ASSERT_EQ(expected, sc.requests.size());
  cov.preemptions += s.stats().num_preemptions;
  cov.drafts += s.stats().num_draft_tokens;
  cov.accepted += s.stats().num_accepted_tokens;
  cov.prefix_hits += s.kv().metrics().hits;
  const int pool_slots = c.num_kv_blocks * c.block_size;
  for (const engine::Request& r : finished) {
    SCOPED_TRACE("request " + std::to_string(r.group_id()) + " sample " +
                 std::to_string(r.sample_index));
    engine::Request orig = sc.requests[std::size_t(r.group_id())];
    if (r.finish_reason == engine::FinishReason::kRejected) continue;
    orig.n = 1;  // sample i alone: the request with seed + i
    orig.seq.sampling.seed += std::uint64_t(r.sample_index);
    cov.samples += r.sample_index > 0;
    const engine::Request ref = harness::fake_reference_run(orig, kVocab, c.max_model_len);
    const std::vector<int>& got = r.seq.token_ids;
    const std::vector<int>& want = ref.seq.token_ids;
    ASSERT_LE(got.size(), want.size());
    EXPECT_TRUE(std::equal(got.begin(), got.end(), want.begin())) << "not the solo tokens";
    // A sample shares the pool with its siblings, so it may stop for capacity earlier than
    // it would alone; a request alone stops exactly when its solo run outgrows the pool.
    const bool shares = sc.requests[std::size_t(r.group_id())].n > 1;
    if (shares && got != want) {
      EXPECT_EQ(r.finish_detail.rfind("KV cache capacity", 0), 0u) << r.finish_detail;
      ++cov.capacity;
    } else if (ref.seq.num_tokens() - 1 > pool_slots) {  // it would need more slots than the pool
      EXPECT_EQ(r.finish_detail.rfind("KV cache capacity", 0), 0u) << r.finish_detail;
      ++cov.capacity;
    } else {
      EXPECT_EQ(got, want);
      EXPECT_EQ(r.finish_detail, ref.finish_detail);
      ++cov.completed;
    }
    cov.rejected_rounds += r.num_draft_tokens - r.num_accepted_tokens > 0;
  }
}

TEST(Ch07StackProperty, RandomWorkloadsWithSpeculationAndTinyPoolsReproduceSoloTokens) {
  Coverage cov;
  for (std::uint64_t seed = 0; seed < 800; ++seed) {
    run_scenario(seed, cov);
    if (::testing::Test::HasFailure()) return;
  }
  std::printf("coverage: %lld completed, %lld preemptions, %lld drafts verified, %lld accepted, "
              "%lld requests with a rejection, %lld prefix-hit blocks, %lld capacity stops, "
              "%lld forked samples, %lld swap-outs\n",
              cov.completed, cov.preemptions, cov.drafts, cov.accepted, cov.rejected_rounds,
              cov.prefix_hits, cov.capacity, cov.samples, cov.swaps);
  for (long long n : {cov.completed, cov.preemptions, cov.drafts, cov.accepted,
                      cov.rejected_rounds, cov.prefix_hits, cov.capacity, cov.samples,
                      cov.swaps}) {
    EXPECT_GT(n, 20) << "a rule the scenarios should exercise was barely reached";
  }
  EXPECT_LT(cov.accepted, cov.drafts) << "the fake drafter should be wrong sometimes";
}

}  // namespace
}  // namespace nanoserve
