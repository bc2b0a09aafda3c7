// Causal GQA attention: hand-computed cases, a naive fp64 loop, GQA == MHA with repeated KV
// heads, and causality (keys after a query's position are never read).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "common/error.h"
#include "common/oracle/attention.h"
#include "common/tolerances.h"
#include "oracle_test_models.h"

namespace nanoserve::oracle {
namespace {

using nanoserve::testing::random_tensor;

TEST(OracleAttention, SingleKeyReturnsItsValue) {
  const std::vector<float> q = {3, -1}, k = {0.5f, 2}, v = {7, -8};
  const int pos = 0;
  std::vector<float> out(2);
  attention(q.data(), &pos, 1, k.data(), v.data(), 1, {1, 1, 2}, out.data());
  EXPECT_EQ(out, v);
}

TEST(OracleAttention, MatchesHandComputedTwoKeyCase) {
  // head_dim 2, scale 1/sqrt(2). q = (sqrt 2 * ln 3, 0); k0 = (0, 1), k1 = (1, 0):
  // scores (0, ln 3) -> weights (1/4, 3/4); out = v0/4 + 3 v1/4.
  const float q0 = float(std::sqrt(2.0) * std::log(3.0));
  const std::vector<float> q = {q0, 0}, k = {0, 1, 1, 0}, v = {4, 8, -4, 0};
  const int pos = 1;
  std::vector<float> out(2);
  attention(q.data(), &pos, 1, k.data(), v.data(), 2, {1, 1, 2}, out.data());
  EXPECT_NEAR(out[0], 4 * 0.25 + -4 * 0.75, 1e-5);
  EXPECT_NEAR(out[1], 8 * 0.25, 1e-5);
}

// Naive fp64 causal GQA attention written from the formula (loops, no Eigen).
std::vector<double> naive_attention(const std::vector<float>& q, const std::vector<int>& pos,
                                    const std::vector<float>& k, const std::vector<float>& v,
                                    int n_heads, int n_kv_heads, int hd) {
  const int T = int(pos.size()), group = n_heads / n_kv_heads;
  std::vector<double> out(size_t(T) * n_heads * hd, 0.0);
  for (int t = 0; t < T; ++t) {
    for (int h = 0; h < n_heads; ++h) {
      const int g = h / group;
      std::vector<double> w(pos[t] + 1);
      double max = -INFINITY, sum = 0;
      for (int j = 0; j <= pos[t]; ++j) {
        double s = 0;
        for (int i = 0; i < hd; ++i) {
          s += double(q[(t * n_heads + h) * hd + i]) * k[(j * n_kv_heads + g) * hd + i];
        }
        w[j] = s / std::sqrt(double(hd));
        max = std::max(max, w[j]);
      }
      for (double& x : w) sum += (x = std::exp(x - max));
      for (int j = 0; j <= pos[t]; ++j) {
        for (int i = 0; i < hd; ++i) {
          out[(t * n_heads + h) * hd + i] += w[j] / sum * v[(j * n_kv_heads + g) * hd + i];
        }
      }
    }
  }
  return out;
}

TEST(OracleAttention, MatchesNaiveFp64LoopsAcrossGqaRatios) {
  const int hd = 16, n_heads = 8;
  const std::vector<int> positions = {0, 1, 16, 4, 28};  // any order; each sees 0..pos
  const int n_keys = 29;
  for (int n_kv_heads : {8, 4, 2, 1}) {  // MHA, GQA 2, GQA 4, MQA
    const int T = int(positions.size());
    const auto q = random_tensor(1, n_kv_heads, size_t(T) * n_heads * hd, 2.0f);
    const auto k = random_tensor(2, n_kv_heads, size_t(n_keys) * n_kv_heads * hd, 2.0f);
    const auto v = random_tensor(3, n_kv_heads, size_t(n_keys) * n_kv_heads * hd, 1.0f);
    std::vector<float> out(q.size());
    attention(q.data(), positions.data(), T, k.data(), v.data(), n_keys,
              {n_heads, n_kv_heads, hd}, out.data());
    const auto want = naive_attention(q, positions, k, v, n_heads, n_kv_heads, hd);
    const std::vector<double> got(out.begin(), out.end());
    const CloseResult res = allclose(got.data(), want.data(), got.size(), tol::kFp32Reorder);
    EXPECT_TRUE(res.ok) << "n_kv_heads=" << n_kv_heads << ": " << res.summary();
  }
}

TEST(OracleAttention, GqaEqualsMhaWithEachKvHeadRepeatedForItsGroup) {
  const int hd = 8, n_heads = 6, n_kv_heads = 2, group = 3, T = 3, n_keys = 5;
  const std::vector<int> positions = {2, 3, 4};
  const auto q = random_tensor(4, 0, size_t(T) * n_heads * hd, 1.5f);
  const auto k = random_tensor(4, 1, size_t(n_keys) * n_kv_heads * hd, 1.5f);
  const auto v = random_tensor(4, 2, size_t(n_keys) * n_kv_heads * hd, 1.0f);
  // Expand (n_keys, 2, hd) to (n_keys, 6, hd): query head h gets KV head h / 3.
  std::vector<float> k_rep(size_t(n_keys) * n_heads * hd), v_rep(k_rep.size());
  for (int j = 0; j < n_keys; ++j) {
    for (int h = 0; h < n_heads; ++h) {
      for (int i = 0; i < hd; ++i) {
        k_rep[(j * n_heads + h) * hd + i] = k[(j * n_kv_heads + h / group) * hd + i];
        v_rep[(j * n_heads + h) * hd + i] = v[(j * n_kv_heads + h / group) * hd + i];
      }
    }
  }
  std::vector<float> gqa(q.size()), mha(q.size());
  attention(q.data(), positions.data(), T, k.data(), v.data(), n_keys,
            {n_heads, n_kv_heads, hd}, gqa.data());
  attention(q.data(), positions.data(), T, k_rep.data(), v_rep.data(), n_keys,
            {n_heads, n_heads, hd}, mha.data());
  const CloseResult res = allclose(gqa, mha, tol::kFp32Reorder);
  EXPECT_TRUE(res.ok) << res.summary();
}

TEST(OracleAttention, NeverReadsKeysAfterTheQueryPosition) {
  // Keys/values past each query's position are NaN: a single read would poison the output.
  const int hd = 4, n_keys = 6;
  const std::vector<int> positions = {0, 2};
  const auto q = random_tensor(5, 0, 2 * hd, 1.0f);
  auto k = random_tensor(5, 1, size_t(n_keys) * hd, 1.0f);
  auto v = random_tensor(5, 2, size_t(n_keys) * hd, 1.0f);
  std::vector<float> clean(q.size()), poisoned(q.size());
  attention(q.data(), positions.data(), 2, k.data(), v.data(), 3, {1, 1, hd}, clean.data());
  for (size_t i = 3 * hd; i < k.size(); ++i) k[i] = v[i] = std::numeric_limits<float>::quiet_NaN();
  attention(q.data(), positions.data(), 2, k.data(), v.data(), n_keys, {1, 1, hd},
            poisoned.data());
  EXPECT_EQ(poisoned, clean);
}

TEST(OracleAttention, RejectsQueryWithoutKeysAndBadHeadRatio) {
  const std::vector<float> q(8, 0.0f), k(8, 0.0f), v(8, 0.0f);
  std::vector<float> out(8);
  const int beyond = 2, negative = -1, ok = 0;
  EXPECT_THROW(attention(q.data(), &beyond, 1, k.data(), v.data(), 2, {1, 1, 4}, out.data()),
               InvalidArgument);
  EXPECT_THROW(attention(q.data(), &negative, 1, k.data(), v.data(), 2, {1, 1, 4}, out.data()),
               InvalidArgument);
  EXPECT_THROW(attention(q.data(), &ok, 1, k.data(), v.data(), 1, {3, 2, 2}, out.data()),
               InvalidArgument);
}

}  // namespace
}  // namespace nanoserve::oracle
