// RoPE in both conventions: hand-computed rotations, a naive fp64 loop, the permutation that
// relates the two conventions, and the relative-position property that motivates RoPE.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "common/oracle/rope.h"
#include "common/tolerances.h"
#include "oracle_test_models.h"

namespace nanoserve::oracle {
namespace {

using nanoserve::testing::random_tensor;

const RopeStyle kStyles[] = {RopeStyle::kAdjacentPairs, RopeStyle::kRotateHalf};

TEST(OracleRope, FrequencyIsThetaToTheMinusTwoIOverHeadDim) {
  EXPECT_FLOAT_EQ(rope_frequency(0, 8, 10000.0f), 1.0f);
  EXPECT_FLOAT_EQ(rope_frequency(1, 4, 100.0f), 0.1f);     // 100^(-2/4)
  EXPECT_FLOAT_EQ(rope_frequency(2, 8, 10000.0f), 0.01f);  // 10^4^(-4/8)
}

TEST(OracleRope, PositionZeroIsIdentity) {
  for (RopeStyle style : kStyles) {
    const auto x0 = random_tensor(1, 0, 2 * 3 * 8, 1.0f);
    auto x = x0;
    const int positions[] = {0, 0};
    rope(x.data(), positions, 2, 3, 8, 10000.0f, style);
    EXPECT_EQ(x, x0) << to_string(style);
  }
}

TEST(OracleRope, RotatesHandComputedPairs) {
  // head_dim 4, theta 100: pair 0 turns by pos rad, pair 1 by 0.1 * pos rad. At pos 3 a unit
  // vector (1, 0) becomes (cos 3, sin 3) in pair 0 and (cos .3, sin .3) in pair 1.
  const double c0 = std::cos(3.0), s0 = std::sin(3.0), c1 = std::cos(0.3), s1 = std::sin(0.3);
  const int pos[] = {3};
  std::vector<float> adj = {1, 0, 1, 0};  // pairs (x0,x1) (x2,x3)
  rope(adj.data(), pos, 1, 1, 4, 100.0f, RopeStyle::kAdjacentPairs);
  const std::vector<double> want_adj = {c0, s0, c1, s1};
  std::vector<float> half = {1, 1, 0, 0};  // pairs (x0,x2) (x1,x3)
  rope(half.data(), pos, 1, 1, 4, 100.0f, RopeStyle::kRotateHalf);
  const std::vector<double> want_half = {c0, c1, s0, s1};
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(adj[i], want_adj[i], 1e-6) << i;
    EXPECT_NEAR(half[i], want_half[i], 1e-6) << i;
  }
}

TEST(OracleRope, MatchesNaiveFp64LoopForEveryHeadAndRow) {
  const int rows = 3, heads = 2, hd = 16;
  const int positions[] = {0, 7, 500};
  for (RopeStyle style : kStyles) {
    const auto x0 = random_tensor(2, 0, size_t(rows) * heads * hd, 1.0f);
    auto x = x0;
    rope(x.data(), positions, rows, heads, hd, 10000.0f, style);
    std::vector<double> want(x.size()), got(x.begin(), x.end());
    for (int r = 0; r < rows; ++r) {
      for (int h = 0; h < heads; ++h) {
        const size_t base = (size_t(r) * heads + h) * hd;
        for (int i = 0; i < hd / 2; ++i) {
          const int a = style == RopeStyle::kAdjacentPairs ? 2 * i : i;
          const int b = style == RopeStyle::kAdjacentPairs ? 2 * i + 1 : i + hd / 2;
          const double phi = positions[r] * std::pow(10000.0, -2.0 * i / hd);
          want[base + a] = x0[base + a] * std::cos(phi) - x0[base + b] * std::sin(phi);
          want[base + b] = x0[base + a] * std::sin(phi) + x0[base + b] * std::cos(phi);
        }
      }
    }
    const CloseResult res = allclose(got.data(), want.data(), got.size(), tol::kRopeFp32Angle);
    EXPECT_TRUE(res.ok) << to_string(style) << ": " << res.summary();
  }
}

TEST(OracleRope, RotateHalfIsAdjacentPairsUnderAPermutationOfHeadDims) {
  // perm[j] = where rotate-half value j sits in the adjacent layout: i -> 2i, i+hd/2 -> 2i+1.
  const int rows = 4, heads = 3, hd = 8;
  const int positions[] = {1, 2, 30, 63};
  std::vector<int> perm(hd);
  for (int i = 0; i < hd / 2; ++i) {
    perm[i] = 2 * i;
    perm[i + hd / 2] = 2 * i + 1;
  }
  const auto half = random_tensor(3, 0, size_t(rows) * heads * hd, 1.0f);
  std::vector<float> adj(half.size());
  for (size_t head = 0; head < half.size() / hd; ++head) {
    for (int j = 0; j < hd; ++j) adj[head * hd + perm[j]] = half[head * hd + j];
  }
  auto half_rot = half;
  rope(half_rot.data(), positions, rows, heads, hd, 500.0f, RopeStyle::kRotateHalf);
  rope(adj.data(), positions, rows, heads, hd, 500.0f, RopeStyle::kAdjacentPairs);
  for (size_t head = 0; head < half.size() / hd; ++head) {
    for (int j = 0; j < hd; ++j) {
      // Same pair, same angle, same arithmetic: bit-identical, not merely close.
      EXPECT_EQ(adj[head * hd + perm[j]], half_rot[head * hd + j]) << head << "," << j;
    }
  }
}

TEST(OracleRope, DotProductDependsOnlyOnRelativePosition) {
  // <rope(q, m), rope(k, n)> is a function of m - n: the property RoPE is designed for.
  const int hd = 16;
  for (RopeStyle style : kStyles) {
    const auto q = random_tensor(4, 0, hd, 1.0f), k = random_tensor(4, 1, hd, 1.0f);
    auto dot_at = [&](int m, int n) {
      auto qm = q, kn = k;
      rope(qm.data(), &m, 1, 1, hd, 10000.0f, style);
      rope(kn.data(), &n, 1, 1, hd, 10000.0f, style);
      double d = 0;
      for (int i = 0; i < hd; ++i) d += double(qm[i]) * kn[i];
      return d;
    };
    const double base = dot_at(5, 2);
    EXPECT_NEAR(dot_at(13, 10), base, 1e-4) << to_string(style);
    EXPECT_NEAR(dot_at(40, 37), base, 1e-4) << to_string(style);
    EXPECT_GT(std::fabs(dot_at(5, 4) - base), 1e-3) << "the test must be able to fail";
  }
}

}  // namespace
}  // namespace nanoserve::oracle
