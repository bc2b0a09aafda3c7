// Weight-only quantized GEMM on the tensor cores (launch_qgemm_tc, W4A16 / W8A16 with fp16 or
// bf16 activations): INT4 and INT8, symmetric and asymmetric, group sizes 32/48/128/per-channel,
// act-order, awkward shapes, both epilogues, output fp32 and T — against oracle::matmul on the
// dequantized weights rounded to T (what the kernel feeds the tensor cores) and the rounded X.
// Named Wmma* so that it also runs under the simulator's permuted fragment mapping.
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "common/allclose.h"
#include "common/tolerances.h"
#include "kernels/gemm_tc.h"
#include "tests/kernels/gemm_tc_test_support.h"
#include "tests/kernels/kernel_test_support.h"
#include "tests/kernels/quant_linear_test_support.h"

namespace nanoserve {
namespace {

using testing::QuantCase;
using testing::QuantLinearProblem;

using testing::TypePair;
using testing::TypePairNames;
using TypePairs = testing::GemmTcTypePairs;
using testing::gemm_tc_output_tolerance;

template <typename V>
std::vector<V> rounded(const std::vector<float>& v) {
  std::vector<V> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = from_float<V>(v[i]);
  return out;
}
template <typename V>
std::vector<float> widened(const std::vector<V>& v) {
  std::vector<float> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = to_float(v[i]);
  return out;
}

// W from QuantLinearProblem (its fp32 X and Y are not used); X rounded to T, Y in OutT.
template <typename P>
void expect_matches_oracle(const QuantCase& c, std::uint64_t seed) {
  using T = typename P::T;
  using OutT = typename P::OutT;
  const QuantLinearProblem q(c, seed);
  const std::vector<T> x = rounded<T>(q.x);
  const std::vector<float> xf = widened(x);
  const std::vector<float> wf = widened(rounded<T>(q.w_dequantized));  // what the MMA sees
  const std::vector<OutT> y0 = rounded<OutT>(q.y_initial);
  const DeviceBuffer<T> dx(x);
  DeviceBuffer<OutT> dy(y0);
  launch_qgemm_tc(q.view(), dx.get(), dy.get(), c.batch, nullptr, c.epilogue);
  std::vector<float> want(static_cast<std::size_t>(c.batch) * c.rows);
  oracle::matmul(xf.data(), wf.data(), c.batch, c.cols, c.rows, want.data());
  if (c.epilogue == Epilogue::kAccumulate) {
    const std::vector<float> before = widened(y0);
    for (std::size_t i = 0; i < want.size(); ++i) want[i] += before[i];
  }
  const CloseResult r = allclose(widened(dy.to_host()), want, gemm_tc_output_tolerance<OutT>());
  EXPECT_TRUE(r.ok) << TypePairNames::GetName<P>(0) << " " << c.label() << ": " << r.summary();
}

template <typename P>
class WmmaQGemmTc : public testing::DeviceTest {};
TYPED_TEST_SUITE(WmmaQGemmTc, TypePairs, TypePairNames);

TYPED_TEST(WmmaQGemmTc, MatchesOracleOverBitsGroupsShapesAndActOrder) {
  // (m, rows, cols): partial 64-row and 64-column tiles, k tiles of 32 with a partial last one,
  // odd nibble counts (cols 33, 100), narrow last groups (172 = 3·48 + 28).
  const std::vector<std::tuple<int, int, int>> shapes = {
      {17, 33, 172}, {3, 129, 100}, {65, 20, 64}, {1, 7, 33}};
  int i = 0;
  for (bool act_order : {false, true}) {
    for (int group_size : {32, 128, 0, 48}) {
      for (int bits : {4, 8}) {
        const bool symmetric = (i % 3) == 0;
        const auto& shape = shapes[static_cast<std::size_t>(i) % shapes.size()];
        QuantCase c;
        c.batch = std::get<0>(shape);
        c.rows = std::get<1>(shape);
        c.cols = std::get<2>(shape);
        c.scheme = quant::QuantScheme{bits, group_size, symmetric};
        c.act_order = act_order;
        c.epilogue = i % 4 == 1 ? Epilogue::kAccumulate : Epilogue::kStore;
        expect_matches_oracle<TypeParam>(c, 300 + i++);
      }
    }
  }
}

using WmmaQGemmTcArgs = testing::DeviceTest;

TEST_F(WmmaQGemmTcArgs, RejectsBadSchemesAndNullBuffers) {
  DeviceBuffer<__half> x(64);
  DeviceBuffer<float> y(64);
  QuantizedWeightView w;
  w.rows = 4;
  w.cols = 8;
  w.bits = 3;
  w.group_size = 8;
  EXPECT_THROW(launch_qgemm_tc(w, x.get(), y.get(), 2, nullptr), std::invalid_argument);
  w.bits = 4;
  w.group_size = 0;
  EXPECT_THROW(launch_qgemm_tc(w, x.get(), y.get(), 2, nullptr), std::invalid_argument);
  w.group_size = 8;
  EXPECT_THROW(launch_qgemm_tc(w, x.get(), y.get(), 2, nullptr), std::invalid_argument);  // codes
  EXPECT_NO_THROW(launch_qgemm_tc(w, x.get(), y.get(), 0, nullptr));  // nothing to do
}

}  // namespace
}  // namespace nanoserve
