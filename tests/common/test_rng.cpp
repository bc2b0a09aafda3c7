#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "common/sampling/rng.h"

namespace nanoserve {
namespace {

// Known-answer vectors published with Random123 (kat_vectors, philox4x32_10).
TEST(Philox, MatchesRandom123KnownAnswers) {
  EXPECT_EQ(philox4x32_10({0, 0, 0, 0}, {0, 0}),
            (Philox4x32{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}));
  EXPECT_EQ(philox4x32_10({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
                          {0xffffffffu, 0xffffffffu}),
            (Philox4x32{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}));
  EXPECT_EQ(philox4x32_10({0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
                          {0xa4093822u, 0x299f31d0u}),
            (Philox4x32{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}));
}

TEST(Philox, DrawDependsOnlyOnSeedPositionAndStream) {
  const double a = uniform01(42, 7, RngStream::kSample);
  EXPECT_EQ(a, uniform01(42, 7, RngStream::kSample));
  EXPECT_NE(a, uniform01(43, 7, RngStream::kSample));
  EXPECT_NE(a, uniform01(42, 8, RngStream::kSample));
  EXPECT_NE(a, uniform01(42, 7, RngStream::kSpecAccept));
}

TEST(Philox, UniformDrawsHaveTheMomentsOfUniform01) {
  // Mean 1/2, variance 1/12; with n = 200k the standard errors are ~6.5e-4 and ~1.9e-4.
  const int n = 200000;
  double sum = 0, sum_sq = 0, lo = 1, hi = 0;
  for (int i = 0; i < n; ++i) {
    const double u = uniform01(1234, uint64_t(i), RngStream::kSample);
    sum += u;
    sum_sq += u * u;
    lo = std::min(lo, u);
    hi = std::max(hi, u);
  }
  const double mean = sum / n, var = sum_sq / n - mean * mean;
  EXPECT_NEAR(mean, 0.5, 5e-3);
  EXPECT_NEAR(var, 1.0 / 12.0, 2e-3);
  EXPECT_GE(lo, 0.0);
  EXPECT_LT(hi, 1.0);
  EXPECT_EQ(uniform_float(0xffffffffu) < 1.0f, true);
}

}  // namespace
}  // namespace nanoserve
