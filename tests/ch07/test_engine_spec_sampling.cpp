// With sampling, speculative decoding inside continuous batching must leave each request's
// output distributed exactly as the target's (Leviathan et al. 2023, Theorem 1): thousands of
// requests (one seed each) go through the scheduler, the ModelExecutor's verification and a
// batched draft model, and the joint distribution of their first three tokens is compared with
// the target's own, computed exactly with the CPU oracle, by a chi-square test. The same test
// must fail for a plausible bug — a drafter that reports the wrong q — or it would prove
// nothing (as tests/ch06/test_spec_rejection.cpp does for the rule alone).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <vector>

#include "ch01/engine_test_support.h"
#include "ch07/stack_test_support.h"
#include "common/engine/serve/draft_model_drafter.h"
#include "common/engine/serve/model_executor.h"
#include "common/engine/serve/serving_loop.h"
#include "common/oracle/forward.h"
#include "common/speculative/draft_models.h"

namespace nanoserve::engine {
namespace {

// top-k 2: every position has 2 possible tokens, so (t1, t2, t3) has 8 outcomes — few bins,
// so a few hundred requests already separate the right rule from the wrong one.
const SamplingParams kParams{1.0f, 2, 1.0f, 0.0f, 0};
const std::vector<int> kPrompt = {1};
constexpr int kRequests = 400;

/// The target's exact probability of every (t1, t2, t3) after the prompt (oracle, fp64 probs).
std::map<std::vector<int>, double> exact_joint(const Model& m) {
  std::map<std::vector<int>, double> joint;
  const int vocab = m.config.vocab_size;
  auto next = [&](const std::vector<int>& ctx) {
    const std::vector<float> all = oracle::forward_prompt(m, ctx);
    return probabilities(all.data() + all.size() - std::size_t(vocab), vocab, kParams);
  };
  const std::vector<double> p1 = next(kPrompt);
  for (int a = 0; a < vocab; ++a) {
    if (p1[std::size_t(a)] == 0) continue;
    std::vector<int> c1 = kPrompt;
    c1.push_back(a);
    const std::vector<double> p2 = next(c1);
    for (int b = 0; b < vocab; ++b) {
      if (p2[std::size_t(b)] == 0) continue;
      std::vector<int> c2 = c1;
      c2.push_back(b);
      const std::vector<double> p3 = next(c2);
      for (int c = 0; c < vocab; ++c) {
        if (p3[std::size_t(c)] > 0) joint[{a, b, c}] = p1[std::size_t(a)] * p2[std::size_t(b)] * p3[std::size_t(c)];
      }
    }
  }
  return joint;
}

/// Pearson's chi-square of the observed outcomes against `p`, bins expecting < 5 pooled; an
/// outcome with p = 0 makes it infinite. Passes below ~6 standard deviations above the mean.
bool chi_square_passes(const std::map<std::vector<int>, long long>& counts,
                       const std::map<std::vector<int>, double>& p, long long n, double* stat) {
  *stat = 0;
  for (const auto& [outcome, c] : counts) {
    if (p.count(outcome) == 0) *stat = INFINITY;
  }
  double pooled_e = 0, pooled_o = 0;
  int bins = 0;
  for (const auto& [outcome, prob] : p) {
    const double e = prob * double(n);
    const auto it = counts.find(outcome);
    const double o = it == counts.end() ? 0.0 : double(it->second);
    if (e < 5) {
      pooled_e += e;
      pooled_o += o;
    } else {
      *stat += (o - e) * (o - e) / e;
      ++bins;
    }
  }
  if (pooled_e > 0) {
    *stat += (pooled_o - pooled_e) * (pooled_o - pooled_e) / pooled_e;
    ++bins;
  }
  const double dof = std::max(1, bins - 1);
  return *stat < dof + 6.0 * std::sqrt(2.0 * dof) + 10.0;
}

/// Wrong on purpose: passes the draft model's tokens on but reports uniform q rows — the
/// verifier then divides by the wrong q (the bug of a drafter whose q is not what it sampled).
class WrongQDrafter final : public Drafter {
 public:
  explicit WrongQDrafter(Drafter& inner) : inner_(inner) {}
  void propose(std::vector<DraftRequest>& batch) override {
    inner_.propose(batch);
    for (DraftRequest& d : batch) {
      for (std::vector<double>& q : d.proposal.q) q.assign(q.size(), 1.0 / double(q.size()));
    }
  }
  void retain(const std::vector<std::int64_t>& ids) override { inner_.retain(ids); }
  int vocab_size() const override { return inner_.vocab_size(); }
  std::string name() const override { return "wrong-q"; }

 private:
  Drafter& inner_;
};

/// The (t1, t2, t3) of every request, through the engine with `drafter` (γ = 2).
std::map<std::vector<int>, long long> engine_outcomes(const DeviceModel& target, Drafter& drafter,
                                                      long long* accepted) {
  SchedulerConfig config;
  config.max_num_seqs = kRequests;
  config.max_num_batched_tokens = 3 * kRequests;  // every request in one wave
  config.max_model_len = 16;
  config.num_kv_blocks = 512;
  config.block_size = 4;
  std::vector<Request> requests;
  for (int i = 0; i < kRequests; ++i) {
    SamplingParams p = kParams;
    p.seed = std::uint64_t(i) + 1000;
    Request r = make_request(i, kPrompt, 3, p);
    r.num_speculative_tokens = 2;
    requests.push_back(r);
  }
  ModelExecutorOptions options = executor_options_for(config, 2);
  options.device_sampling = false;  // the simulator's top-k sampling kernel is slow; ch04 tests it
  ModelExecutor executor(target, options);
  SimulatedClock clock;
  const ServingRun run = run_continuous(requests, config, executor, clock, {}, &drafter);
  *accepted = run.num_accepted_tokens;
  std::map<std::vector<int>, long long> counts;
  for (const Request& r : run.requests) ++counts[r.output_tokens()];
  return counts;
}

TEST(Ch07EngineSpecSampling, OutputIsDistributedAsTheTargetsAndAWrongQFails) {
  NANOSERVE_REQUIRE_DEVICE();
  const Model target_host = testing::micro_model(7, 2);
  const Model draft_host = speculative::first_layers(target_host, 1);  // p and q overlap partly
  const DeviceModel target(target_host, DType::kF32), draft(draft_host, DType::kF32);
  const std::map<std::vector<int>, double> p = exact_joint(target_host);
  DraftModelDrafterOptions o;
  o.num_kv_blocks = 512;
  o.block_size = 4;
  o.max_seqs = kRequests;
  o.max_tokens_per_step = 3 * kRequests;

  DraftModelDrafter drafter(draft, target_host.config.vocab_size, o);
  long long accepted = 0;
  double stat = 0;
  const auto right = engine_outcomes(target, drafter, &accepted);
  EXPECT_TRUE(chi_square_passes(right, p, kRequests, &stat)) << "chi2 " << stat;
  std::printf("right: chi2 %.1f over %zu outcomes, %lld drafts accepted\n", stat, p.size(), accepted);
  EXPECT_GT(accepted, kRequests / 4) << "the draft should be accepted often enough to matter";

  DraftModelDrafter inner(draft, target_host.config.vocab_size, o);
  WrongQDrafter wrong(inner);
  const auto biased = engine_outcomes(target, wrong, &accepted);
  EXPECT_FALSE(chi_square_passes(biased, p, kRequests, &stat)) << "chi2 " << stat;
  std::printf("wrong q: chi2 %.1f, %lld drafts accepted\n", stat, accepted);
}

}  // namespace
}  // namespace nanoserve::engine
