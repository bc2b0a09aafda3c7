// The rejection step of speculative sampling must reproduce the target distribution p
// exactly (Leviathan et al. 2023, Appendix A.1; Chen et al. 2023, Theorem 1). Checked by many
// seeded runs of the step with a chi-square test, on handmade small-vocabulary p and q and on
// model distributions —
// and the same test must fail for plausible wrong rules, or it would prove nothing.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "common/error.h"
#include "common/oracle/forward.h"
#include "common/sampling/rng.h"
#include "common/speculative/rejection.h"
#include "spec_test_support.h"

namespace nanoserve::speculative {
namespace {

/// A rejection rule under test: (p, q, x, u_accept, u_residual) -> emitted token.
using Rule = std::function<int(const std::vector<double>&, const std::vector<double>&, int,
                               double, double)>;

int correct_rule(const std::vector<double>& p, const std::vector<double>& q, int x, double ua,
                 double ur) {
  return accept_or_resample(p, q, x, ua, ur).token;
}

/// Wrong: on rejection, resample from p instead of the residual (double-counts the overlap).
int wrong_residual_from_p(const std::vector<double>& p, const std::vector<double>& q, int x,
                          double ua, double ur) {
  if (ua * q[size_t(x)] < p[size_t(x)]) return x;
  return sample_from(p, ur);
}

/// Wrong: walk max(0, p − q) as if it summed to 1, keeping the draft token when the walk runs
/// off the end (the residual was never renormalized).
int wrong_unnormalized_residual(const std::vector<double>& p, const std::vector<double>& q, int x,
                                double ua, double ur) {
  if (ua * q[size_t(x)] < p[size_t(x)]) return x;
  const std::vector<double> r = residual_weights(p, q);
  double cumulative = 0;
  for (size_t i = 0; i < r.size(); ++i) {
    cumulative += r[i];
    if (ur < cumulative) return int(i);
  }
  return x;
}

/// Pearson's chi-square of `counts` against `p`, bins with expectation < 5 pooled into one;
/// a token with p = 0 that was emitted makes the statistic infinite.
struct ChiSquare {
  double stat = 0;
  int dof = 0;
  /// About 6 standard deviations above the mean of the chi-square(dof) distribution
  /// (mean dof, variance 2 dof): a correct rule fails with probability well below 1e-6.
  bool passes() const { return stat < dof + 6.0 * std::sqrt(2.0 * dof) + 10.0; }
};
ChiSquare chi_square(const std::vector<int64_t>& counts, const std::vector<double>& p,
                     int64_t n) {
  ChiSquare c;
  double pooled_expected = 0, pooled_observed = 0;
  int bins = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    const double expected = p[i] * double(n);
    if (p[i] == 0.0) {
      if (counts[i] > 0) c.stat = INFINITY;
    } else if (expected < 5) {
      pooled_expected += expected;
      pooled_observed += double(counts[i]);
    } else {
      c.stat += (double(counts[i]) - expected) * (double(counts[i]) - expected) / expected;
      ++bins;
    }
  }
  if (pooled_expected > 0) {
    c.stat += (pooled_observed - pooled_expected) * (pooled_observed - pooled_expected) /
              pooled_expected;
    ++bins;
  }
  c.dof = std::max(1, bins - 1);
  return c;
}

/// `n` seeded runs of draft-then-verify: x ~ q (or the fixed token `point` when >= 0, q =
/// one-hot), then `rule`; returns the chi-square of the emitted tokens against p.
ChiSquare run_trials(const Rule& rule, const std::vector<double>& p, const std::vector<double>& q,
                     int64_t n, int point = -1) {
  std::vector<int64_t> counts(p.size(), 0);
  const uint64_t seed = 2024;
  for (int64_t t = 0; t < n; ++t) {
    const uint64_t pos = uint64_t(t);  // each trial its own "position": independent draws
    const int x =
        point >= 0 ? point : sample_from(q, uniform01(seed, pos, RngStream::kDraftSample));
    ++counts[size_t(rule(p, q, x, uniform01(seed, pos, RngStream::kSpecAccept),
                         uniform01(seed, pos, RngStream::kSpecResidual)))];
  }
  return chi_square(counts, p, n);
}

// V = 6; q puts mass on token 4 where p has none, and p is larger than q on tokens 1, 3, 5.
const std::vector<double> kP = {0.05, 0.30, 0.15, 0.25, 0.00, 0.25};
const std::vector<double> kQ = {0.40, 0.10, 0.20, 0.05, 0.20, 0.05};
constexpr int64_t kTrials = 100000;
/// Real distributions have hundreds of tokens, so fewer trials keep the test quick.
constexpr int64_t kRealTrials = 40000;

TEST(Ch06Rejection, HandmadeSixTokenCaseReproducesTargetDistribution) {
  const ChiSquare c = run_trials(correct_rule, kP, kQ, kTrials);
  EXPECT_TRUE(c.passes()) << "chi2 " << c.stat << " dof " << c.dof;
}

TEST(Ch06Rejection, WrongRulesFailTheSameTest) {
  const ChiSquare from_p = run_trials(wrong_residual_from_p, kP, kQ, kTrials);
  EXPECT_FALSE(from_p.passes()) << "chi2 " << from_p.stat;
  const ChiSquare unnormalized = run_trials(wrong_unnormalized_residual, kP, kQ, kTrials);
  EXPECT_FALSE(unnormalized.passes()) << "chi2 " << unnormalized.stat;
}

TEST(Ch06Rejection, PointMassProposalReproducesTargetDistribution) {
  // A deterministic guess (the n-gram proposer) is q = one-hot: accepted with probability
  // p(x), else a draw from p without x — exactly p. Try an unlikely and a likely guess (a
  // guess with p(x) = 0 would not separate the rules: there the residual *is* p).
  std::vector<double> one_hot(kP.size(), 0.0);
  for (int x : {0, 1}) {
    SCOPED_TRACE(x);
    std::fill(one_hot.begin(), one_hot.end(), 0.0);
    one_hot[size_t(x)] = 1.0;
    EXPECT_TRUE(run_trials(correct_rule, kP, one_hot, kTrials, x).passes());
    EXPECT_FALSE(run_trials(wrong_residual_from_p, kP, one_hot, kTrials, x).passes());
    EXPECT_FALSE(run_trials(wrong_unnormalized_residual, kP, one_hot, kTrials, x).passes());
  }
}

/// One (draft, sampling parameters) pair whose q is compared with the target's p.
struct DraftCase {
  std::string draft;
  SamplingParams params;
};

/// p from `m`'s target after its prompt, q from the draft of each case: the correct rule passes
/// the chi-square test and both wrong rules fail it. A case only separates the rules when p and
/// q overlap partly: with disjoint supports the residual *is* p (so resampling from p is right
/// by accident), and when p is a point mass every rule emits that token.
void expect_exact_on_model_distributions(const testing::SpecFixtureModel& m,
                                         const std::vector<DraftCase>& cases) {
  auto last_row = [&](const Model& model) {
    const std::vector<float> all = oracle::forward_prompt(model, m.prompt);
    return std::vector<float>(all.end() - model.config.vocab_size, all.end());
  };
  const std::vector<float> target_logits = last_row(m.target);
  const int vocab = m.target.config.vocab_size;
  for (const DraftCase& c : cases) {
    SCOPED_TRACE(c.draft + " T=" + std::to_string(c.params.temperature));
    const std::vector<float> draft_logits = last_row(m.drafts.at(c.draft));
    const std::vector<double> p = probabilities(target_logits.data(), vocab, c.params);
    const std::vector<double> q = probabilities(draft_logits.data(), vocab, c.params);
    const ChiSquare ok = run_trials(correct_rule, p, q, kRealTrials);
    EXPECT_TRUE(ok.passes()) << "chi2 " << ok.stat << " dof " << ok.dof;
    const ChiSquare from_p = run_trials(wrong_residual_from_p, p, q, kRealTrials);
    const ChiSquare unnormalized = run_trials(wrong_unnormalized_residual, p, q, kRealTrials);
    EXPECT_FALSE(from_p.passes()) << "chi2 " << from_p.stat << " dof " << from_p.dof;
    EXPECT_FALSE(unnormalized.passes()) << "chi2 " << unnormalized.stat;
  }
}

const SamplingParams kPlainT1{1.0f, 0, 1.0f, 0.0f, 0};

TEST(Ch06Rejection, SyntheticModelDistributionsReproduceTarget) {
  // Random weights give broad distributions: every case overlaps partly.
  const SamplingParams filtered{0.8f, 40, 0.9f, 0.0f, 0};
  expect_exact_on_model_distributions(testing::synthetic_tiny(),
                                      {{"layers-1", kPlainT1}, {"layers-1", filtered},
                                       {"unrelated", kPlainT1}, {"unrelated", filtered}});
}

TEST(Ch06Rejection, Stories260KDistributionsReproduceTarget) {
  NANOSERVE_REQUIRE_DATA(path, "stories260K.bin");
  // The trained model is confident after its prompt; its INT4 copy overlaps it closely (total
  // variation ~0.01-0.02) and its first two layers barely (~0.995), which T = 1.5 with top-k
  // and top-p widens enough to separate the rules.
  const SamplingParams warm{1.5f, 50, 0.95f, 0.0f, 0};
  expect_exact_on_model_distributions(*testing::stories260k(),
                                      {{"int4-rtn", kPlainT1}, {"int4-rtn", warm},
                                       {"layers-2", warm}});
}

TEST(Ch06Rejection, AcceptsAlwaysWhenTargetIsAtLeastDraftAndResamplesOnlyWherePExceedsQ) {
  // Hand-checked: p(1) = 0.30 >= q(1) = 0.10, so token 1 is kept even at u = 0.999.
  EXPECT_TRUE(accept_or_resample(kP, kQ, 1, 0.999, 0.5).accepted);
  // p(4) = 0 < q(4): always rejected; the residual (0, .2, 0, .2, 0, .2)/0.6 at u = 0.5
  // gives token 3 (cumulative 1/3, 2/3, 1 over tokens 1, 3, 5).
  const TokenVerdict v = accept_or_resample(kP, kQ, 4, 0.0, 0.5);
  EXPECT_FALSE(v.accepted);
  EXPECT_EQ(v.token, 3);
  // p(0)/q(0) = 0.125: kept at u = 0.1, rejected at u = 0.2.
  EXPECT_TRUE(accept_or_resample(kP, kQ, 0, 0.1, 0.5).accepted);
  EXPECT_FALSE(accept_or_resample(kP, kQ, 0, 0.2, 0.5).accepted);
}

TEST(Ch06Rejection, RefusesDraftTokenTheDraftCouldNotHaveProposed) {
  const std::vector<double> q = {0.5, 0.5, 0.0, 0.0, 0.0, 0.0};
  EXPECT_THROW(accept_or_resample(kP, q, 3, 0.5, 0.5), InvalidArgument);
  EXPECT_THROW(accept_or_resample(kP, q, 6, 0.5, 0.5), InvalidArgument);
  EXPECT_THROW(accept_or_resample(kP, {0.5, 0.5}, 0, 0.5, 0.5), InvalidArgument);
}

}  // namespace
}  // namespace nanoserve::speculative
