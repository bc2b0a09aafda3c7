// The sampler's filters keep exactly the right tokens, greedy breaks ties by lowest id, the
// draw is the documented inverse CDF, and bad parameters are rejected.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "common/error.h"
#include "common/sampling/rng.h"
#include "common/sampling/sampler.h"

namespace nanoserve {
namespace {

// Logits whose softmax is, by id: 1/8, 1/2, 1/16, 1/4, 1/16. Ranking: 1, 3, 0, 2, 4 (2 and 4
// tie; the lower id ranks first). Dyadic so cumulative masses are exact boundaries we can
// stay clear of.
const std::vector<double> kProbs = {0.125, 0.5, 0.0625, 0.25, 0.0625};
std::vector<float> handmade_logits() {
  std::vector<float> l;
  for (double p : kProbs) l.push_back(float(std::log(p)));
  return l;
}

// The ids with non-zero probability.
std::vector<int> kept(const std::vector<float>& logits, const SamplingParams& params) {
  const std::vector<double> p = probabilities(logits.data(), int(logits.size()), params);
  std::vector<int> ids;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] > 0) ids.push_back(int(i));
  }
  return ids;
}

SamplingParams with(int top_k, float top_p, float min_p, float temperature = 1.0f) {
  SamplingParams s;
  s.top_k = top_k;
  s.top_p = top_p;
  s.min_p = min_p;
  s.temperature = temperature;
  return s;
}

TEST(Sampler, WithoutFiltersProbabilitiesAreTheSoftmax) {
  const auto logits = handmade_logits();
  const auto p = probabilities(logits.data(), 5, SamplingParams{});
  for (int i = 0; i < 5; ++i) EXPECT_NEAR(p[i], kProbs[i], 1e-7) << i;
}

TEST(Sampler, TemperatureRaisesProbabilitiesToThePowerOneOverT) {
  // softmax(l / T) ∝ softmax(l)^(1/T).
  const auto logits = handmade_logits();
  for (float t : {0.5f, 2.0f, 3.0f}) {
    const auto p = probabilities(logits.data(), 5, with(0, 1, 0, t));
    double z = 0;
    for (double q : kProbs) z += std::pow(q, 1.0 / t);
    for (int i = 0; i < 5; ++i) EXPECT_NEAR(p[i], std::pow(kProbs[i], 1.0 / t) / z, 1e-7);
  }
}

TEST(Sampler, TopKKeepsExactlyKAndBreaksBoundaryTiesByLowerId) {
  const auto l = handmade_logits();
  EXPECT_EQ(kept(l, with(1, 1, 0)), (std::vector<int>{1}));
  EXPECT_EQ(kept(l, with(2, 1, 0)), (std::vector<int>{1, 3}));
  EXPECT_EQ(kept(l, with(4, 1, 0)), (std::vector<int>{0, 1, 2, 3}));  // 2 beats 4 on the tie
  EXPECT_EQ(kept(l, with(0, 1, 0)), (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(kept(l, with(99, 1, 0)), (std::vector<int>{0, 1, 2, 3, 4}));
  const auto p = probabilities(l.data(), 5, with(2, 1, 0));
  EXPECT_NEAR(p[1], 2.0 / 3, 1e-7);  // renormalized 1/2 : 1/4
  EXPECT_NEAR(p[3], 1.0 / 3, 1e-7);
}

TEST(Sampler, TopPKeepsTheShortestPrefixReachingTheMass) {
  // Cumulative masses in ranking order: 0.5, 0.75, 0.875, 0.9375, 1.
  const auto l = handmade_logits();
  EXPECT_EQ(kept(l, with(0, 0.01f, 0)), (std::vector<int>{1}));  // at least one token
  EXPECT_EQ(kept(l, with(0, 0.4f, 0)), (std::vector<int>{1}));
  EXPECT_EQ(kept(l, with(0, 0.7f, 0)), (std::vector<int>{1, 3}));
  EXPECT_EQ(kept(l, with(0, 0.8f, 0)), (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(kept(l, with(0, 0.9f, 0)), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(kept(l, with(0, 0.95f, 0)), (std::vector<int>{0, 1, 2, 3, 4}));
}

TEST(Sampler, MinPKeepsTokensAtLeastMinPTimesTheMaximum) {
  // p_max = 1/2: thresholds 0.15, 0.1, 0.06, 0.5.
  const auto l = handmade_logits();
  EXPECT_EQ(kept(l, with(0, 1, 0.3f)), (std::vector<int>{1, 3}));
  EXPECT_EQ(kept(l, with(0, 1, 0.2f)), (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(kept(l, with(0, 1, 0.12f)), (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(kept(l, with(0, 1, 1.0f)), (std::vector<int>{1}));
}

TEST(Sampler, FiltersApplyInOrderTopKThenTopPThenMinP) {
  const auto l = handmade_logits();
  // top-k 3 leaves 4/7, 2/7, 1/7; top-p 0.8 then needs two tokens (6/7). Top-p on the
  // unfiltered distribution would have needed three (0.875).
  EXPECT_EQ(kept(l, with(3, 0.8f, 0)), (std::vector<int>{1, 3}));
  // top-p 0.9 keeps four; min-p 0.2 (threshold 0.1) then drops id 2.
  EXPECT_EQ(kept(l, with(0, 0.9f, 0.2f)), (std::vector<int>{0, 1, 3}));
  const auto p = probabilities(l.data(), 5, with(3, 0.8f, 0));
  EXPECT_NEAR(p[1] + p[3], 1.0, 1e-12);
}

TEST(Sampler, MinusInfinityLogitsAreNeverKept) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> l = {-inf, 0.0f, -inf, 0.0f};
  EXPECT_EQ(kept(l, SamplingParams{}), (std::vector<int>{1, 3}));
  EXPECT_EQ(kept(l, with(3, 1, 0)), (std::vector<int>{1, 3}));
  for (uint64_t pos = 0; pos < 200; ++pos) {
    const int t = sample(l.data(), 4, SamplingParams{}, pos);
    ASSERT_TRUE(t == 1 || t == 3) << t;
  }
}

TEST(Sampler, GreedyPicksArgmaxWithTiesToLowestIdRegardlessOfSeedAndPosition) {
  const std::vector<float> l = {1.0f, 3.0f, 3.0f, 2.0f};
  EXPECT_EQ(argmax(l.data(), 4), 1);
  SamplingParams greedy = with(2, 0.5f, 0.5f, 0.0f);
  for (uint64_t seed : {0ull, 7ull}) {
    greedy.seed = seed;
    for (uint64_t pos = 0; pos < 20; ++pos) EXPECT_EQ(sample(l.data(), 4, greedy, pos), 1);
  }
  EXPECT_EQ(probabilities(l.data(), 4, greedy), (std::vector<double>{0, 1, 0, 0}));
}

TEST(Sampler, InverseCdfWalksIdsInAscendingOrder) {
  // Cumulative: 0.2 | 0.7 | 1.0. Unnormalized weights give the same answers.
  for (double scale : {1.0, 10.0}) {
    const std::vector<double> w = {0.2 * scale, 0.5 * scale, 0.3 * scale};
    EXPECT_EQ(sample_from(w, 0.0), 0);
    EXPECT_EQ(sample_from(w, 0.19), 0);
    EXPECT_EQ(sample_from(w, 0.21), 1);
    EXPECT_EQ(sample_from(w, 0.69), 1);
    EXPECT_EQ(sample_from(w, 0.71), 2);
    EXPECT_EQ(sample_from(w, 0.999999), 2);
  }
  EXPECT_EQ(sample_from({0, 1, 0}, 0.0), 1);
  EXPECT_EQ(sample_from({0, 1, 0}, std::nextafter(1.0, 0.0)), 1);
}

TEST(Sampler, SampleIsOneDrawFromTheFilteredDistribution) {
  const auto l = handmade_logits();
  const SamplingParams params = with(4, 0.9f, 0.05f, 0.7f);
  const auto p = probabilities(l.data(), 5, params);
  int differs = 0;
  for (uint64_t pos = 0; pos < 500; ++pos) {
    const int t = sample(l.data(), 5, params, pos);
    EXPECT_EQ(t, sample_from(p, uniform01(params.seed, pos, RngStream::kSample)));
    EXPECT_EQ(t, sample(l.data(), 5, params, pos)) << "same inputs, same token";
    SamplingParams other = params;
    other.seed = 1;
    differs += t != sample(l.data(), 5, other, pos);
  }
  EXPECT_GT(differs, 100) << "another seed must give another sequence";
}

TEST(Sampler, RejectsOutOfRangeParameters) {
  const auto l = handmade_logits();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const SamplingParams bad[] = {with(0, 1, 0, -0.1f), with(0, 1, 0, nan),
                                with(0, 1, 0, INFINITY), with(-1, 1, 0),
                                with(0, 0.0f, 0), with(0, 1.5f, 0), with(0, nan, 0),
                                with(0, 1, -0.1f), with(0, 1, 1.1f)};
  for (const SamplingParams& p : bad) {
    EXPECT_THROW(p.validate(), InvalidArgument);
    EXPECT_THROW(sample(l.data(), 5, p, 0), InvalidArgument);
    EXPECT_THROW(probabilities(l.data(), 5, p), InvalidArgument);
  }
}

TEST(Sampler, RejectsNanOrPlusInfinityLogitsAndEmptyInputs) {
  const float inf = std::numeric_limits<float>::infinity();
  for (float badv : {std::numeric_limits<float>::quiet_NaN(), inf}) {
    const std::vector<float> l = {0.0f, badv};
    EXPECT_THROW(sample(l.data(), 2, SamplingParams{}, 0), InvalidArgument);
    EXPECT_THROW(sample(l.data(), 2, with(0, 1, 0, 0.0f), 0), InvalidArgument);
  }
  const std::vector<float> masked = {-inf, -inf};
  EXPECT_THROW(probabilities(masked.data(), 2, SamplingParams{}), InvalidArgument);
  EXPECT_THROW(argmax(masked.data(), 0), InvalidArgument);
  EXPECT_THROW(sample_from({0.5, 0.5}, 1.0), InvalidArgument);
  EXPECT_THROW(sample_from({0.5, -0.1}, 0.5), InvalidArgument);
  EXPECT_THROW(sample_from({0.0, 0.0}, 0.5), InvalidArgument);
  EXPECT_THROW(sample_from({}, 0.5), InvalidArgument);
}

}  // namespace
}  // namespace nanoserve
