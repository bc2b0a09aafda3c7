// Statistical checks: many draws at different positions follow the filtered distribution
// (Pearson chi-square, fixed seeds, fixed critical values), and the temperature limits.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "common/sampling/sampler.h"

namespace nanoserve {
namespace {

// Upper 0.1% points of the chi-square distribution (df = 1..8), from standard tables: a
// correct sampler fails one of these with probability 1e-3 per case — but seeds are fixed, so
// a pass is reproducible, and a biased sampler (e.g. off-by-one in the CDF walk) fails by far.
const double kChi2Critical999[] = {0, 10.828, 13.816, 16.266, 18.467, 20.515, 22.458, 24.322,
                                   26.124};

const std::vector<float> kLogits = {0.3f, 2.0f, -1.0f, 1.2f, 0.0f, 1.9f, -0.4f, 0.8f, -3.0f};

TEST(SamplerDistribution, EmpiricalFrequenciesMatchFilteredProbabilities) {
  struct Case {
    SamplingParams params;
    const char* name;
  };
  const Case cases[] = {
      {{1.0f, 0, 1.0f, 0.0f, 11}, "plain"},
      {{0.7f, 5, 1.0f, 0.0f, 12}, "top-k 5, T 0.7"},
      {{1.3f, 0, 0.8f, 0.0f, 13}, "top-p 0.8, T 1.3"},
      {{1.0f, 6, 0.9f, 0.15f, 14}, "top-k 6 + top-p 0.9 + min-p 0.15"},
  };
  const int n = 40000;
  const int vocab = int(kLogits.size());
  for (const Case& c : cases) {
    const std::vector<double> p = probabilities(kLogits.data(), vocab, c.params);
    std::vector<int> counts(vocab, 0);
    for (int pos = 0; pos < n; ++pos) ++counts[sample(kLogits.data(), vocab, c.params, pos)];
    double chi2 = 0;
    int kept = 0;
    for (int i = 0; i < vocab; ++i) {
      if (p[i] == 0) {
        EXPECT_EQ(counts[i], 0) << c.name << ": removed token " << i << " was sampled";
        continue;
      }
      ++kept;
      const double expected = n * p[i];
      chi2 += (counts[i] - expected) * (counts[i] - expected) / expected;
    }
    ASSERT_GE(kept, 2) << c.name;
    EXPECT_LT(chi2, kChi2Critical999[kept - 1]) << c.name << " (df " << kept - 1 << ")";
  }
}

TEST(SamplerDistribution, LowTemperatureApproachesGreedy) {
  const int vocab = int(kLogits.size());  // argmax is id 1 (2.0), runner-up id 5 (1.9)
  double previous = 0;
  for (float t : {1.0f, 0.3f, 0.1f, 0.03f}) {
    SamplingParams s;
    s.temperature = t;
    const double p_top = probabilities(kLogits.data(), vocab, s)[1];
    EXPECT_GT(p_top, previous) << "T=" << t;
    previous = p_top;
  }
  // At T = 0.002 the runner-up has weight exp(-0.1 / 0.002) = e^-50 ~ 2e-22.
  SamplingParams cold;
  cold.temperature = 0.002f;
  EXPECT_GT(probabilities(kLogits.data(), vocab, cold)[1], 1.0 - 1e-15);
  for (uint64_t pos = 0; pos < 1000; ++pos) {
    ASSERT_EQ(sample(kLogits.data(), vocab, cold, pos), 1);
  }
}

TEST(SamplerDistribution, HighTemperatureApproachesUniform) {
  const int vocab = int(kLogits.size());
  // Logits span 5, so at temperature T every weight is within a factor e^(5/T) of the others.
  for (float t : {1e3f, 1e5f}) {
    SamplingParams hot;
    hot.temperature = t;
    const auto p = probabilities(kLogits.data(), vocab, hot);
    for (double q : p) EXPECT_NEAR(q * vocab, 1.0, 6.0 / t) << "T=" << t;
  }
}

}  // namespace
}  // namespace nanoserve
