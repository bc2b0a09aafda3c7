// GPTQ (common/quant/gptq.h) against two independent references: RTN when H = I (no error
// feedback), and a column-by-column OBS implementation with an explicit inverse Hessian
// (no Cholesky, no lazy batches) for correlated inputs, with and without act-order.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <algorithm>
#include <numeric>

#include "common/error.h"
#include "common/quant/calibration.h"
#include "common/quant/gptq.h"
#include "common/quant/rtn.h"
#include "quant_test_support.h"

namespace nanoserve::quant {
namespace {

/// The Hessian 2/N XᵀX of N correlated random inputs of width `cols` (X = Z A).
Eigen::MatrixXd correlated_hessian(int cols, int n, uint64_t seed, int dead_column = -1) {
  const std::vector<float> z = testing::random_weights(seed, size_t(n * cols));
  const std::vector<float> a = testing::random_weights(seed + 1, size_t(cols * cols));
  using RowMatrixF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  RowMatrixF x = Eigen::Map<const RowMatrixF>(z.data(), n, cols) *
                 Eigen::Map<const RowMatrixF>(a.data(), cols, cols);
  if (dead_column >= 0) x.col(dead_column).setZero();
  InputStats stats(cols);
  stats.add(x.data(), n);
  return stats.hessian();
}

/// GPTQ the slow way (Frantar et al. 2023, eqs. 2-3, i.e. OBQ with a fixed order): quantize
/// column order[k], move the remaining columns by -err · H⁻¹[j, :] / H⁻¹[j, j], eliminate j from
/// H⁻¹. Returns the dequantized weights in the original column order.
std::vector<float> reference_gptq(const std::vector<float>& w, int rows, int cols,
                                  Eigen::MatrixXd h, const QuantScheme& s, bool act_order) {
  Eigen::MatrixXd W(rows, cols);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) W(r, c) = w[size_t(r * cols + c)];
  const int width = s.group_width(cols);
  std::vector<GroupParams> row_params(static_cast<size_t>(rows));
  if (s.groups(cols) == 1) {  // per channel: from the original weights
    for (int r = 0; r < rows; ++r) row_params[size_t(r)] = choose_group_params(&w[size_t(r * cols)], cols, s);
  }
  for (int j = 0; j < cols; ++j) {
    if (h(j, j) == 0) {
      h(j, j) = 1;
      W.col(j).setZero();
    }
  }
  std::vector<int> order(static_cast<size_t>(cols));
  std::iota(order.begin(), order.end(), 0);
  if (act_order) {
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return h(a, a) > h(b, b); });
  }
  h.diagonal().array() += 0.01 * h.diagonal().mean();
  Eigen::MatrixXd hinv = h.inverse();
  std::vector<float> out(static_cast<size_t>(rows * cols));
  for (int k = 0; k < cols; ++k) {
    const int j = order[size_t(k)];
    if (s.groups(cols) > 1 && k % width == 0) {
      for (int r = 0; r < rows; ++r) {
        std::vector<float> group;
        for (int m = k; m < std::min(cols, k + width); ++m) group.push_back(float(W(r, order[size_t(m)])));
        row_params[size_t(r)] = choose_group_params(group.data(), int(group.size()), s);
      }
    }
    for (int r = 0; r < rows; ++r) {
      const GroupParams& p = row_params[size_t(r)];
      const float q = dequantize_code(quantize_code(float(W(r, j)), p, s.max_code()), p);
      out[size_t(r * cols + j)] = q;
      const double err = (W(r, j) - double(q)) / hinv(j, j);
      for (int m = k + 1; m < cols; ++m) W(r, order[size_t(m)]) -= err * hinv(j, order[size_t(m)]);
    }
    hinv -= hinv.col(j) * hinv.row(j) / hinv(j, j);  // eliminate column j
  }
  return out;
}

int count_mismatches(const std::vector<float>& a, const std::vector<float>& b) {
  int n = 0;
  for (size_t i = 0; i < a.size(); ++i) n += a[i] != b[i];
  return n;
}

TEST(QuantGptq, IdentityHessianEqualsRtnExactly) {
  const int rows = 9, cols = 172;
  const std::vector<float> w = testing::weights_with_outliers(21, size_t(rows * cols), 17, 8.0f);
  const Eigen::MatrixXd identity = Eigen::MatrixXd::Identity(cols, cols);
  for (const QuantScheme& s : {QuantScheme{4, 32, true}, QuantScheme{4, 64, false},
                               QuantScheme{8, 0, true}, QuantScheme{4, 0, false}}) {
    for (bool act_order : {false, true}) {
      GptqOptions o;
      o.act_order = act_order;  // equal diagonals: the stable order is the identity
      const QuantizedLinear g = gptq_quantize(w.data(), rows, cols, identity, s, o).weight;
      const QuantizedLinear r = quantize_rtn(w.data(), rows, cols, s);
      EXPECT_EQ(g.qweight, r.qweight) << s.label();
      EXPECT_EQ(g.scales, r.scales) << s.label();
      EXPECT_EQ(g.zeros, r.zeros) << s.label();
    }
  }
}

TEST(QuantGptq, LazyBatchesMatchColumnByColumnObsReference) {
  const int rows = 7, cols = 200;
  const std::vector<float> w = testing::random_weights(31, size_t(rows * cols));
  const Eigen::MatrixXd h = correlated_hessian(cols, 400, 32);
  for (const QuantScheme& s : {QuantScheme{4, 32, true}, QuantScheme{4, 0, false},
                               QuantScheme{8, 64, false}}) {
    const std::vector<float> want = reference_gptq(w, rows, cols, h, s, false);
    for (int block : {1, 7, 128}) {
      GptqOptions o;
      o.block_size = block;
      const std::vector<float> got = gptq_quantize(w.data(), rows, cols, h, s, o).weight.dequantize();
      EXPECT_EQ(count_mismatches(got, want), 0) << s.label() << " block " << block;
    }
  }
}

TEST(QuantGptq, ActOrderDequantizesInOriginalColumnOrder) {
  const int rows = 5, cols = 96;
  const std::vector<float> w = testing::random_weights(41, size_t(rows * cols));
  Eigen::MatrixXd h = correlated_hessian(cols, 300, 42);
  for (int j = 0; j < cols; ++j) h(j, j) += 0.01 * (j % 13);  // distinct diagonals
  const QuantScheme s{4, 32, false};
  GptqOptions o;
  o.act_order = true;
  const QuantizedLinear q = gptq_quantize(w.data(), rows, cols, h, s, o).weight;
  EXPECT_EQ(count_mismatches(q.dequantize(), reference_gptq(w, rows, cols, h, s, true)), 0);
  // g_idx: the k-th column in decreasing-diag order belongs to group k / 32.
  std::vector<int> order(cols);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return h(a, a) > h(b, b); });
  ASSERT_EQ(q.g_idx.size(), size_t(cols));
  for (int k = 0; k < cols; ++k) EXPECT_EQ(q.g_idx[size_t(order[size_t(k)])], k / 32) << k;
  EXPECT_NE(order[0], 0);  // the permutation is not trivial
}

TEST(QuantGptq, DeadInputColumnIsQuantizedToZero) {
  const int rows = 6, cols = 64;
  const std::vector<float> w = testing::random_weights(51, size_t(rows * cols));
  const Eigen::MatrixXd h = correlated_hessian(cols, 200, 52, /*dead_column=*/5);
  ASSERT_EQ(h(5, 5), 0.0);
  const std::vector<float> q =
      gptq_quantize(w.data(), rows, cols, h, {4, 32, true}).weight.dequantize();
  for (int r = 0; r < rows; ++r) EXPECT_EQ(q[size_t(r * cols + 5)], 0.0f) << r;
  EXPECT_EQ(count_mismatches(q, reference_gptq(w, rows, cols, h, {4, 32, true}, false)), 0);
}

TEST(QuantGptq, LowersOutputErrorBelowRtnOnCorrelatedInputs) {
  const int rows = 16, cols = 128;
  const std::vector<float> w = testing::random_weights(61, size_t(rows * cols));
  const Eigen::MatrixXd h = correlated_hessian(cols, 500, 62);
  const Eigen::MatrixXd gram = h;  // any positive multiple of X Xᵀ ranks errors the same
  for (const QuantScheme& s : {QuantScheme{4, 32, true}, QuantScheme{4, 0, false}}) {
    const std::vector<float> g = gptq_quantize(w.data(), rows, cols, h, s).weight.dequantize();
    const std::vector<float> r = fake_quantize_rtn(w.data(), rows, cols, s);
    EXPECT_LT(output_error(w.data(), g.data(), rows, gram),
              0.8 * output_error(w.data(), r.data(), rows, gram)) << s.label();
  }
}

TEST(QuantGptq, RejectsMismatchedHessian) {
  const std::vector<float> w(4 * 8, 1.0f);
  EXPECT_THROW(gptq_quantize(w.data(), 4, 8, Eigen::MatrixXd::Identity(7, 7), {4, 0, true}),
               InvalidArgument);
  GptqOptions o;
  o.block_size = 0;
  EXPECT_THROW(gptq_quantize(w.data(), 4, 8, Eigen::MatrixXd::Identity(8, 8), {4, 0, true}, o),
               InvalidArgument);
}

}  // namespace
}  // namespace nanoserve::quant
