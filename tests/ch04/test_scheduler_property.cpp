// Scheduler property test: hundreds of random scenarios — random configs, arrivals, lengths,
// shared prefixes, stop rules and cancellations, with KV pools small enough to force
// preemption — driven step by step with the fake model. After every step the budgets, the
// FCFS order and the KV invariants hold; at the end every request is finished, no block is
// leaked, and every request's tokens are exactly what it produces alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "common/harness/fake_executor.h"
#include "common/engine/serve/scheduler.h"
#include "common/sampling/rng.h"

namespace nanoserve {
namespace {

using Ids = std::vector<int64_t>;
constexpr int kVocab = 12;  // small, so EOS (0) and two-letter stop strings really occur

std::string letter(int /*prev*/, int token) { return std::string(1, char('a' + token)); }

/// Deterministic draws for one scenario.
struct Draws {
  uint64_t seed;
  uint64_t counter = 0;
  int uniform(int lo, int hi) {  // [lo, hi]
    const uint32_t bits = random_bits(seed, counter++, RngStream::kWorkload, 99)[0];
    return lo + int(bits % uint32_t(hi - lo + 1));
  }
  bool chance(int percent) { return uniform(0, 99) < percent; }
};

struct Scenario {
  engine::SchedulerConfig config;
  std::vector<engine::Request> requests;
  std::vector<int> arrival_step;  // (requests) the step before which each is added
};

Scenario random_scenario(uint64_t seed) {
  Draws d{seed};
  Scenario s;
  engine::SchedulerConfig& c = s.config;
  c.block_size = std::vector<int>{1, 2, 3, 4, 8}[size_t(d.uniform(0, 4))];
  c.max_model_len = d.uniform(6, 40);
  c.num_kv_blocks = d.uniform(1, 60 / c.block_size + 2);
  c.max_num_seqs = d.uniform(1, 8);
  c.enable_chunked_prefill = d.chance(70);
  c.max_num_batched_tokens = d.uniform(1, 48);
  if (!c.enable_chunked_prefill) c.max_num_batched_tokens += c.max_model_len;
  c.enable_prefix_caching = d.chance(60);
  std::vector<std::vector<int>> system_prompts(3);
  for (auto& p : system_prompts) {
    for (int i = d.uniform(1, 12); i > 0; --i) p.push_back(d.uniform(1, kVocab - 1));
  }
  const int n = d.uniform(1, 24);
  for (int i = 0; i < n; ++i) {
    std::vector<int> prompt;
    if (d.chance(50)) prompt = system_prompts[size_t(d.uniform(0, 2))];
    for (int k = d.uniform(prompt.empty() ? 1 : 0, c.max_model_len); k > 0; --k) {
      prompt.push_back(d.uniform(0, kVocab - 1));
    }
    SamplingParams sampling{d.chance(50) ? 0.0f : 1.0f};
    sampling.seed = uint64_t(d.uniform(0, 3));  // few seeds: equal requests happen
    engine::Request r = engine::make_request(i, prompt, d.uniform(1, 20), sampling);
    if (d.chance(50)) r.stop_token_ids = {0};
    if (d.chance(30)) r.stop_strings = {"bc", "kk"};
    s.requests.push_back(r);
    s.arrival_step.push_back(d.uniform(0, 30));
  }
  return s;
}

/// Whether `whole` is `prefix` followed by `rest`.
bool splits(const Ids& whole, const Ids& prefix, const Ids& rest) {
  if (prefix.size() + rest.size() != whole.size()) return false;
  return std::equal(prefix.begin(), prefix.end(), whole.begin()) &&
         std::equal(rest.begin(), rest.end(), whole.begin() + std::ptrdiff_t(prefix.size()));
}

/// What the scenarios exercised, so the test can prove it is not vacuous.
struct Coverage {
  long long preemptions = 0, prefix_hits = 0, split_prompts = 0, rejected = 0, capacity = 0,
            cancelled = 0, stop_strings = 0, stop_tokens = 0, completed = 0;
};

void run_scenario(uint64_t seed, Coverage& cov) {
  SCOPED_TRACE("scenario seed " + std::to_string(seed));
  Scenario sc = random_scenario(seed);
  const engine::SchedulerConfig& c = sc.config;
  Draws d{seed ^ 0xC0FFEEull};
  engine::Scheduler s(c, letter);
  harness::FakeExecutor ex(c.num_kv_blocks, c.block_size, kVocab);
  std::vector<engine::Request> finished;
  size_t added = 0;
  for (int t = 0;; ++t) {
    ASSERT_LT(t, 10000) << "no progress";
    for (size_t i = 0; i < sc.requests.size(); ++i) {
      if (sc.arrival_step[i] == t) {
        s.add_request(sc.requests[i]);
        ++added;
      }
    }
    if (!s.has_unfinished()) {
      if (added == sc.requests.size()) break;
      continue;
    }
    const Ids running_before = s.running_ids();
    const Ids waiting_before = s.waiting_ids();
    const engine::SchedulerOutput out = s.schedule(double(t));
    ASSERT_EQ(s.check_invariants(), "");
    // Budgets.
    EXPECT_LE(out.num_batched_tokens(), c.max_num_batched_tokens);
    EXPECT_LE(s.num_running(), c.max_num_seqs);
    // FCFS: preempted requests go to the front (the latest preempted, i.e. the oldest, first);
    // admissions take a prefix of that queue, minus requests that ended while planning.
    std::vector<engine::Request> ended = s.take_finished();
    Ids queue(out.preempted_ids.rbegin(), out.preempted_ids.rend());
    queue.insert(queue.end(), waiting_before.begin(), waiting_before.end());
    for (const engine::Request& r : ended) queue.erase(std::remove(queue.begin(), queue.end(), r.id()),
                                               queue.end());
    Ids admitted;
    for (const engine::ScheduledSequence& q : out.seqs) {
      const bool was_running =
          std::count(running_before.begin(), running_before.end(), q.seq_id) != 0 &&
          std::count(out.preempted_ids.begin(), out.preempted_ids.end(), q.seq_id) == 0;
      if (!was_running) admitted.push_back(q.seq_id);
      EXPECT_GE(q.num_tokens, 1);
      cov.split_prompts += !q.sample && q.start_pos < q.request->prompt_len;
      if (!was_running && !c.enable_chunked_prefill) {
        EXPECT_TRUE(q.sample) << "a prompt was split with chunked prefill off";
      }
    }
    EXPECT_TRUE(splits(queue, admitted, s.waiting_ids())) << "FCFS order broken";
    finished.insert(finished.end(), ended.begin(), ended.end());
    if (d.chance(3) && s.has_unfinished()) s.cancel(d.uniform(0, int(sc.requests.size()) - 1));
    const std::vector<int> tokens = out.empty() ? std::vector<int>{} : ex.execute(out);
    s.update(out, tokens, double(t + 1));
    ASSERT_EQ(s.check_invariants(), "");
    if (d.chance(3)) s.cancel(d.uniform(0, int(sc.requests.size()) - 1));
    for (engine::Request& r : s.take_finished()) finished.push_back(std::move(r));
  }
  for (engine::Request& r : s.take_finished()) finished.push_back(std::move(r));  // late rejections
  // No leak: every block free, every request finished exactly once.
  EXPECT_EQ(s.kv().pool().num_free_blocks(), c.num_kv_blocks);
  EXPECT_EQ(s.kv().num_sequences(), 0);
  ASSERT_EQ(finished.size(), sc.requests.size());
  cov.preemptions += s.stats().num_preemptions;
  cov.prefix_hits += s.kv().metrics().hits;
  const int pool_slots = c.num_kv_blocks * c.block_size;
  for (const engine::Request& r : finished) {
    SCOPED_TRACE("request " + std::to_string(r.id()));
    const engine::Request& orig = sc.requests[size_t(r.id())];
    ASSERT_TRUE(r.finished());
    ASSERT_FALSE(r.finish_detail.empty());
    const bool too_long = orig.prompt_len > c.max_model_len;
    const bool too_big = (orig.prompt_len + c.block_size - 1) / c.block_size > c.num_kv_blocks;
    EXPECT_EQ(r.finish_reason == engine::FinishReason::kRejected, too_long || too_big);
    cov.rejected += r.finish_reason == engine::FinishReason::kRejected;
    cov.cancelled += r.finish_reason == engine::FinishReason::kCancelled;
    if (r.finish_reason == engine::FinishReason::kRejected) continue;
    const engine::Request ref = harness::fake_reference_run(orig, kVocab, c.max_model_len, letter);
    const std::vector<int>& got = r.seq.token_ids;
    const std::vector<int>& want = ref.seq.token_ids;
    ASSERT_LE(got.size(), want.size());
    EXPECT_TRUE(std::equal(got.begin(), got.end(), want.begin())) << "not the solo tokens";
    if (r.finish_reason == engine::FinishReason::kCancelled) continue;
    if (ref.seq.num_tokens() - 1 > pool_slots) {  // it would need more slots than the pool
      EXPECT_EQ(r.seq.num_tokens(), pool_slots + 1);
      EXPECT_EQ(r.finish_detail.rfind("KV cache capacity", 0), 0u) << r.finish_detail;
      ++cov.capacity;
    } else {
      EXPECT_EQ(got, want);
      EXPECT_EQ(r.finish_reason, ref.finish_reason);
      EXPECT_EQ(r.finish_detail, ref.finish_detail);
      EXPECT_EQ(r.output_text, ref.output_text);
      ++cov.completed;
      cov.stop_strings += r.finish_detail.rfind("stop string", 0) == 0;
      cov.stop_tokens += r.finish_detail.rfind("stop token", 0) == 0;
    }
  }
}

TEST(Ch04SchedulerProperty, RandomScenariosKeepEveryRuleAndReproduceSoloTokens) {
  Coverage cov;
  for (uint64_t seed = 0; seed < 2000; ++seed) {
    run_scenario(seed, cov);
    if (::testing::Test::HasFailure()) return;  // one scenario's failures are enough to read
  }
  std::printf("coverage: %lld completed, %lld preemptions, %lld prefix-hit blocks, %lld split "
              "prompt chunks, %lld rejected, %lld capacity stops, %lld cancelled, %lld stop "
              "strings, %lld stop tokens\n",
              cov.completed, cov.preemptions, cov.prefix_hits, cov.split_prompts, cov.rejected,
              cov.capacity, cov.cancelled, cov.stop_strings, cov.stop_tokens);
  // Every rule must have been exercised many times for the equalities above to mean much.
  for (long long n : {cov.completed, cov.preemptions, cov.prefix_hits, cov.split_prompts,
                      cov.rejected, cov.capacity, cov.cancelled, cov.stop_strings,
                      cov.stop_tokens}) {
    EXPECT_GE(n, 20);
  }
}

}  // namespace
}  // namespace nanoserve
