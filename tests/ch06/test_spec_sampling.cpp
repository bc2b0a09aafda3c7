// Sampled speculative decoding end to end: the joint distribution of the generated tokens is
// the target's, every random draw depends only on (seed, position), and the measurement
// helpers compute what the paper's formula says.
#include <gtest/gtest.h>

#include <cmath>

#include "common/oracle/forward.h"
#include "common/sampling/rng.h"
#include "common/speculative/draft_model_proposer.h"
#include "common/speculative/rejection.h"
#include "common/speculative/spec_decoder.h"
#include "chapters/ch06_speculative_decoding/spec_sweep.h"
#include "spec_test_support.h"

namespace nanoserve::speculative {
namespace {

/// A Llama small enough to enumerate: vocabulary 8, context 32.
Model eight_token_model(uint64_t seed) {
  ModelConfig c;
  c.name = "v8-seed" + std::to_string(seed);
  c.dim = 32;
  c.hidden_dim = 64;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 8;
  c.vocab_size = 8;
  c.max_seq_len = 32;
  c.tied_classifier = false;
  return make_synthetic_model(c, seed);
}

std::vector<double> next_distribution(const Model& model, const std::vector<int>& tokens,
                                      const SamplingParams& params) {
  const std::vector<float> all = oracle::forward_prompt(model, tokens);
  return probabilities(all.data() + all.size() - size_t(model.config.vocab_size),
                       model.config.vocab_size, params);
}

TEST(Ch06SpecSampling, JointDistributionOfTwoTokensIsTheTargets) {
  const Model target = eight_token_model(1);
  const std::vector<int> prompt{1, 3, 5};
  const SamplingParams base{1.0f, 0, 1.0f, 0.0f, 0};
  // Exact joint P(a, b) = p(a | prompt) p(b | prompt, a): 64 cells.
  const std::vector<double> first = next_distribution(target, prompt, base);
  std::vector<double> joint(64);
  for (int a = 0; a < 8; ++a) {
    std::vector<int> ctx = prompt;
    ctx.push_back(a);
    const std::vector<double> second = next_distribution(target, ctx, base);
    for (int b = 0; b < 8; ++b) joint[size_t(a * 8 + b)] = first[size_t(a)] * second[size_t(b)];
  }
  for (const Model& draft_model : {eight_token_model(2), first_layers(target, 1)}) {
    SCOPED_TRACE(draft_model.config.name);
    OracleRollbackDecoder t(target), d(draft_model);
    DraftModelProposer proposer(d, 8);
    SpecOptions spec;
    spec.gamma = 2;  // with 3 tokens to make, both judged tokens come from the rule
    SpecDecoder decoder(t, proposer, spec);
    constexpr int kRuns = 12000;
    std::vector<int64_t> counts(64, 0);
    int64_t rejected = 0;
    for (int run = 0; run < kRuns; ++run) {
      GenerateOptions options;
      options.max_new_tokens = 3;
      options.sampling = base;
      options.sampling.seed = uint64_t(run);
      const SpecResult r = decoder.generate(prompt, options);
      ++counts[size_t(r.generation.tokens[3] * 8 + r.generation.tokens[4])];
      rejected += r.stats.rejected;
    }
    double chi2 = 0;
    int cells = 0;
    for (size_t i = 0; i < 64; ++i) {
      const double expected = joint[i] * kRuns;
      if (expected < 5) continue;  // too rare to test; their mass is checked below in total
      chi2 += (double(counts[i]) - expected) * (double(counts[i]) - expected) / expected;
      ++cells;
    }
    // ~6 standard deviations above the chi-square mean (dof = cells - 1).
    EXPECT_LT(chi2, cells + 6.0 * std::sqrt(2.0 * cells) + 10) << "cells " << cells;
    EXPECT_GT(rejected, kRuns / 20) << "the residual path was hardly exercised";
  }
}

TEST(Ch06SpecSampling, DecisionAtAPositionDoesNotDependOnGamma) {
  // The token emitted at position L comes from draws keyed by (seed, L) only: verifying the
  // first draft alone or together with two more must give the same verdict and token.
  const testing::SpecFixtureModel& m = testing::synthetic_tiny();
  OracleRollbackDecoder draft(m.drafts.at("unrelated")), target(m.target);
  DraftModelProposer proposer(draft, m.target.config.vocab_size);
  const int L = int(m.prompt.size());
  int rejections = 0;
  for (uint64_t seed = 0; seed < 60; ++seed) {
    const SamplingParams params{1.0f, 0, 1.0f, 0.0f, seed};
    proposer.reset();
    const Proposal three = proposer.propose(m.prompt, 3, params);
    std::vector<int> feed{m.prompt.back()};
    feed.insert(feed.end(), three.tokens.begin(), three.tokens.end());
    target.forward_all(std::vector<int>(m.prompt.begin(), m.prompt.end() - 1), 0);
    const std::vector<float> logits = target.forward_all(feed, L - 1);  // (4, vocab)
    const VerifyResult all = verify_proposal(logits, 512, three, params, L);
    const Proposal one{{three.tokens[0]}, {three.q[0]}};
    const VerifyResult first = verify_proposal(
        std::vector<float>(logits.begin(), logits.begin() + 2 * 512), 512, one, params, L);
    EXPECT_EQ(all.tokens[0], first.tokens[0]) << "seed " << seed;
    EXPECT_EQ(all.accepted > 0, first.accepted > 0) << "seed " << seed;
    rejections += first.accepted == 0;
  }
  EXPECT_GT(rejections, 0);
}

TEST(Ch06SpecSampling, SameSeedSameTokens) {
  const testing::SpecFixtureModel& m = testing::synthetic_tiny();
  GenerateOptions options;
  options.max_new_tokens = 30;
  options.sampling = SamplingParams{0.9f, 0, 0.95f, 0.0f, 77};
  auto once = [&](uint64_t seed) {
    OracleRollbackDecoder target(m.target), draft(m.drafts.at("layers-2"));
    DraftModelProposer proposer(draft, 512);
    GenerateOptions o = options;
    o.sampling.seed = seed;
    return SpecDecoder(target, proposer).generate(m.prompt, o).generation.tokens;
  };
  EXPECT_EQ(once(77), once(77));
  EXPECT_NE(once(77), once(78));
}

TEST(Ch06SpecSampling, PredictedSpeedupMatchesHandComputedValues) {
  // (1 − 0.8^5) / (0.2 · (4 · 0.1 + 1)) = 0.67232 / 0.28
  EXPECT_NEAR(predicted_speedup(0.8, 4, 0.1), 0.67232 / 0.28, 1e-12);
  EXPECT_DOUBLE_EQ(predicted_speedup(1.0, 3, 0.0), 4.0);   // every draft kept, free drafts
  EXPECT_DOUBLE_EQ(predicted_speedup(0.0, 5, 0.2), 0.5);   // nothing kept: pure overhead
  EXPECT_DOUBLE_EQ(expected_tokens_per_round(0.5, 2), 1.75);  // 1 + 0.5 + 0.25
}

TEST(Ch06SpecSampling, SweepRowsAreConsistentWithTheirCounts) {
  const testing::SpecFixtureModel& m = testing::synthetic_tiny();
  const std::vector<ch06::SweepDraft> drafts{{"identical", &m.drafts.at("identical"), 1.0},
                                       {"ngram", nullptr, 0.0}};
  const std::vector<ch06::SweepCase> cases{{"greedy", testing::greedy_options(12)}};
  const std::vector<ch06::SweepRow> rows = ch06::spec_sweep(m.target, drafts, {m.prompt}, cases, {1, 3});
  ASSERT_EQ(rows.size(), 4u);
  for (const ch06::SweepRow& r : rows) {
    SCOPED_TRACE(r.draft + " " + std::to_string(r.gamma));
    EXPECT_EQ(r.generated, 12);
    // Predictions are over the rounds the run had (rounds_offering), not γ every round.
    EXPECT_DOUBLE_EQ(r.predicted_speedup, predicted_speedup(r.alpha, r.rounds_offering, r.c));
    EXPECT_DOUBLE_EQ(r.predicted_at_bytes,
                     predicted_speedup(r.alpha, r.rounds_offering, r.c_bytes));
    EXPECT_DOUBLE_EQ(r.predicted_with_verify,
                     predicted_speedup(r.alpha, r.rounds_offering, r.c, r.verify_cost));
    EXPECT_DOUBLE_EQ(r.predicted_tokens_per_forward,
                     expected_tokens_per_round(r.alpha, r.rounds_offering));
    EXPECT_GT(r.measured_speedup, 0.0);
    if (r.draft == "identical") {
      EXPECT_DOUBLE_EQ(r.alpha, 1.0);
      EXPECT_DOUBLE_EQ(r.tokens_per_forward, r.gamma + 1.0);  // 12 divides by 2 and by 4
      EXPECT_DOUBLE_EQ(r.predicted_tokens_per_forward, r.tokens_per_forward);
      EXPECT_DOUBLE_EQ(r.empty_rounds, 0.0);
    }
  }
  EXPECT_NE(ch06::format_sweep_table(rows).find("ngram"), std::string::npos);
  EXPECT_EQ(ch06::to_json(rows[0])["gamma"], 1);
  EXPECT_TRUE(ch06::to_json(rows[0]).contains("rounds_offering"));
}

}  // namespace
}  // namespace nanoserve::speculative
