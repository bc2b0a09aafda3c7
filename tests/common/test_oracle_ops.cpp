// The oracle's dense and element-wise ops on hand-computed cases and against naive fp64 loops
// (a different code path from the Eigen expressions under test).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "common/error.h"
#include "common/oracle/ops.h"
#include "common/tolerances.h"
#include "oracle_test_models.h"

namespace nanoserve::oracle {
namespace {

using nanoserve::testing::random_tensor;

// Awkward sizes (docs/style.md, convention 9): 1, odd, primes, one past a power of two.
const int kSizes[] = {1, 3, 17, 129};

TEST(OracleEmbedding, GathersRowsOfTheTable) {
  const std::vector<float> table = {0, 1, 10, 11, 20, 21};  // (3, 2): row i = (10i, 10i+1)
  const std::vector<int> tokens = {2, 0, 2};
  std::vector<float> out(6);
  embedding(table.data(), 3, 2, tokens.data(), 3, out.data());
  EXPECT_EQ(out, (std::vector<float>{20, 21, 0, 1, 20, 21}));
}

TEST(OracleEmbedding, RejectsTokenOutsideTheVocabulary) {
  const std::vector<float> table(6, 0.0f);
  std::vector<float> out(4);
  for (int bad : {3, -1}) {
    const std::vector<int> tokens = {0, bad};
    EXPECT_THROW(embedding(table.data(), 3, 2, tokens.data(), 2, out.data()), InvalidArgument);
  }
}

TEST(OracleRmsNorm, MatchesHandComputedRow) {
  // x = (3, 4): mean(x²) = 12.5, so x / sqrt(12.5) = (0.848528…, 1.131371…); gain (1, 2).
  const std::vector<float> x = {3, 4}, gain = {1, 2};
  std::vector<float> out(2);
  rmsnorm(x.data(), gain.data(), 1, 2, 0.0f, out.data());
  EXPECT_NEAR(out[0], 3.0 / std::sqrt(12.5), 1e-6);
  EXPECT_NEAR(out[1], 2 * 4.0 / std::sqrt(12.5), 1e-6);
}

TEST(OracleRmsNorm, EpsilonKeepsZeroRowFiniteAndIsAddedInsideTheRoot) {
  // x = 0 gives 0 (not NaN). x = (1) with eps 3: 1 / sqrt(1 + 3) = 0.5.
  const std::vector<float> zero = {0, 0}, one = {1}, gain = {1, 1};
  std::vector<float> out(2);
  rmsnorm(zero.data(), gain.data(), 1, 2, 1e-5f, out.data());
  EXPECT_EQ(out, (std::vector<float>{0, 0}));
  rmsnorm(one.data(), gain.data(), 1, 1, 3.0f, out.data());
  EXPECT_FLOAT_EQ(out[0], 0.5f);
}

TEST(OracleRmsNorm, MatchesNaiveFp64LoopInPlace) {
  for (int dim : kSizes) {
    const int rows = 3;
    std::vector<float> x = random_tensor(1, dim, size_t(rows) * dim, 2.0f);
    const std::vector<float> gain = random_tensor(2, dim, dim, 0.5f, 1.0f);
    std::vector<double> want(x.size());
    for (int r = 0; r < rows; ++r) {
      double ss = 0;
      for (int i = 0; i < dim; ++i) ss += double(x[r * dim + i]) * x[r * dim + i];
      const double inv = 1.0 / std::sqrt(ss / dim + 1e-5);
      for (int i = 0; i < dim; ++i) want[r * dim + i] = x[r * dim + i] * inv * gain[i];
    }
    rmsnorm(x.data(), gain.data(), rows, dim, 1e-5f, x.data());  // in place
    const std::vector<double> got(x.begin(), x.end());
    const CloseResult r = allclose(got.data(), want.data(), got.size(), tol::kFp32Reorder);
    EXPECT_TRUE(r.ok) << "dim=" << dim << ": " << r.summary();
  }
}

TEST(OracleMatmul, MatchesHandComputedProduct) {
  // W (2, 3) = [[1, 2, 3], [4, 5, 6]]; X rows (1, 0, -1) and (1, 1, 1).
  // Y = X Wᵀ = [[1-3, 4-6], [6, 15]] = [[-2, -2], [6, 15]].
  const std::vector<float> w = {1, 2, 3, 4, 5, 6}, x = {1, 0, -1, 1, 1, 1};
  std::vector<float> y(4);
  matmul(x.data(), w.data(), 2, 3, 2, y.data());
  EXPECT_EQ(y, (std::vector<float>{-2, -2, 6, 15}));
}

TEST(OracleMatmul, MatchesNaiveFp64LoopsOverAwkwardShapes) {
  for (int rows : {1, 3}) {
    for (int in_dim : kSizes) {
      for (int out_dim : {1, 5, 33}) {
        const auto x = random_tensor(3, in_dim, size_t(rows) * in_dim, 1.0f);
        const auto w = random_tensor(4, in_dim, size_t(out_dim) * in_dim, 1.0f);
        std::vector<float> y(size_t(rows) * out_dim);
        matmul(x.data(), w.data(), rows, in_dim, out_dim, y.data());
        std::vector<double> want(y.size()), got(y.begin(), y.end());
        for (int r = 0; r < rows; ++r) {
          for (int o = 0; o < out_dim; ++o) {
            double acc = 0;
            for (int i = 0; i < in_dim; ++i) acc += double(w[o * in_dim + i]) * x[r * in_dim + i];
            want[r * out_dim + o] = acc;
          }
        }
        const CloseResult res = allclose(got.data(), want.data(), got.size(), tol::kFp32Reorder);
        EXPECT_TRUE(res.ok) << rows << "x" << in_dim << "->" << out_dim << ": " << res.summary();
      }
    }
  }
}

TEST(OracleGemv, EqualsMatmulWithOneRow) {
  const int in_dim = 129, out_dim = 17;
  const auto x = random_tensor(5, 0, in_dim, 1.0f);
  const auto w = random_tensor(6, 0, size_t(out_dim) * in_dim, 1.0f);
  std::vector<float> a(out_dim), b(out_dim);
  gemv(w.data(), x.data(), out_dim, in_dim, a.data());
  matmul(x.data(), w.data(), 1, in_dim, out_dim, b.data());
  const CloseResult res = allclose(a, b, tol::kFp32Reorder);
  EXPECT_TRUE(res.ok) << res.summary();
}

TEST(OracleSoftmax, MatchesHandComputedProbabilities) {
  // exp(0) : exp(ln 2) : exp(ln 3) = 1 : 2 : 3.
  const std::vector<float> x = {0.0f, std::log(2.0f), std::log(3.0f)};
  std::vector<float> p(3);
  softmax(x.data(), 1, 3, p.data());
  EXPECT_NEAR(p[0], 1.0 / 6, 1e-7);
  EXPECT_NEAR(p[1], 2.0 / 6, 1e-7);
  EXPECT_NEAR(p[2], 3.0 / 6, 1e-7);
}

TEST(OracleSoftmax, IsStableForHugeLogitsAndZeroForMinusInfinity) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x = {1000.0f, 1000.0f, -inf, -1000.0f};  // (2, 2), in place
  softmax(x.data(), 2, 2, x.data());
  EXPECT_EQ(x, (std::vector<float>{0.5f, 0.5f, 0.0f, 1.0f}));
}

TEST(OracleSoftmax, RowsSumToOneAndMatchNaiveFp64) {
  for (int n : kSizes) {
    const int rows = 2;
    const auto x = random_tensor(7, n, size_t(rows) * n, 20.0f);
    std::vector<float> p(x.size());
    softmax(x.data(), rows, n, p.data());
    std::vector<double> want(x.size()), got(p.begin(), p.end());
    for (int r = 0; r < rows; ++r) {
      double sum = 0;
      for (int i = 0; i < n; ++i) sum += std::exp(double(x[r * n + i]));
      for (int i = 0; i < n; ++i) want[r * n + i] = std::exp(double(x[r * n + i])) / sum;
    }
    const CloseResult res = allclose(got.data(), want.data(), got.size(), tol::kFp32VsFp64);
    EXPECT_TRUE(res.ok) << "n=" << n << ": " << res.summary();
  }
}

TEST(OracleSwiglu, IsSiluOfGateTimesUp) {
  // silu(0) = 0; silu(ln 3) = ln 3 / (1 + 1/3) = 0.75 ln 3; silu(-ln 3) = -ln 3 / 4.
  const float l3 = std::log(3.0f);
  const std::vector<float> gate = {0.0f, l3, -l3}, up = {5.0f, 2.0f, -4.0f};
  std::vector<float> out(3);
  swiglu(gate.data(), up.data(), 3, out.data());
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_NEAR(out[1], 0.75 * std::log(3.0) * 2, 1e-6);
  EXPECT_NEAR(out[2], -std::log(3.0) / 4 * -4, 1e-6);
}

TEST(OracleSwiglu, StaysFiniteForLargeNegativeGates) {
  // exp(200) overflows fp32; silu must still tend to 0 rather than produce NaN.
  const std::vector<float> gate = {-200.0f, 200.0f}, up = {1.0f, 1.0f};
  std::vector<float> out(2);
  swiglu(gate.data(), up.data(), 2, out.data());
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_EQ(out[1], 200.0f);
}

TEST(OracleResidualAdd, AddsInPlace) {
  std::vector<float> x = {1, 2, 3};
  const std::vector<float> d = {0.5f, -2, 10};
  residual_add(x.data(), d.data(), 3);
  EXPECT_EQ(x, (std::vector<float>{1.5f, 0, 13}));
}

}  // namespace
}  // namespace nanoserve::oracle
