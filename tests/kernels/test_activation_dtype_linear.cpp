// The linear layers with fp16 / bf16 activations (issue 21, "Precision"): launch_linear (GEMV
// and GEMM sides) and launch_quant_linear (true W4A16 / W8A16), X and Y in the activation type A
// or Y in fp32 (the classifier's logits). The oracle multiplies exactly the rounded values the
// kernel reads, so only the one rounding on store is allowed (tol::kKernelStoreFp16 / Bf16); the
// accumulate epilogue must round the sum old Y + X Wᵀ once.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/oracle/ops.h"
#include "common/tolerances.h"
#include "kernels/device_buffer.h"
#include "kernels/gemm_tc.h"
#include "kernels/linear.h"
#include "kernels/qlinear.h"
#include "tests/kernels/activation_dtype_test_support.h"
#include "tests/kernels/kernel_test_support.h"
#include "tests/kernels/quant_linear_test_support.h"

namespace nanoserve {
namespace {

using testing::download;
using testing::rounded;
using testing::store_tolerance;

// `n` values uniform in [-scale, scale) (linear_test_support's seeded generator).
std::vector<float> random_values(std::uint64_t seed, std::uint64_t id, std::size_t n,
                                 float scale) {
  return testing::random_uniform(n, seed * 1000003 + id, scale);
}

template <typename A>
DeviceBuffer<A> upload(const std::vector<float>& values) {
  return testing::upload_as<A>(values);
}

template <typename A>
class ActivationDtypeLinear : public testing::DeviceTest {};
using HalfTypes = ::testing::Types<__half, __nv_bfloat16>;
TYPED_TEST_SUITE(ActivationDtypeLinear, HalfTypes, testing::StorageTypeNames);

// launch_linear on both sides of the GEMV/GEMM switch, W in A, Y in A (store and accumulate)
// and in fp32 (the classifier).
TYPED_TEST(ActivationDtypeLinear, LinearRoundsOnceOnStoreAndOnAccumulate) {
  using A = TypeParam;
  constexpr int kN = 70, kK = 136;
  for (int m : {1, 3, kLinearGemvMaxRows + 1, 67}) {
    const std::vector<float> w = rounded<A>(random_values(46, m, kN * kK, 1.0f / 12));
    const std::vector<float> x = rounded<A>(random_values(47, m, std::size_t(m) * kK, 1.0f));
    const std::vector<float> y0 = rounded<A>(random_values(48, m, std::size_t(m) * kN, 1.0f));
    std::vector<float> xw(std::size_t(m) * kN);
    oracle::matmul(x.data(), w.data(), m, kK, kN, xw.data());
    std::vector<float> accumulated = xw;
    for (std::size_t i = 0; i < xw.size(); ++i) accumulated[i] += y0[i];
    DeviceBuffer<A> d_w = upload<A>(w), d_x = upload<A>(x);
    const std::string at = " m=" + std::to_string(m);
    {
      DeviceBuffer<A> d_y(xw.size());
      launch_linear<A, A, A>(d_w.get(), d_x.get(), d_y.get(), m, kN, kK, nullptr, Epilogue::kStore);
      testing::expect_within(download(d_y), xw, store_tolerance<A>(), "store" + at);
    }
    {
      DeviceBuffer<A> d_y = upload<A>(y0);
      launch_linear<A, A, A>(d_w.get(), d_x.get(), d_y.get(), m, kN, kK, nullptr,
                             Epilogue::kAccumulate);
      testing::expect_within(download(d_y), accumulated, store_tolerance<A>(),
                             "accumulate" + at);
    }
    {  // fp32 output: no rounding at all, only the order of the sums differs
      DeviceBuffer<float> d_y(xw.size());
      launch_linear<A, A, float>(d_w.get(), d_x.get(), d_y.get(), m, kN, kK, nullptr,
                                 Epilogue::kStore);
      testing::expect_within(d_y.to_host(), xw, tol::kFp32DotReorder, "fp32 out" + at);
    }
  }
}

// Beyond the GEMV rows, fp16/bf16 weights with activations of the same type go to the tensor
// cores: launch_linear gives exactly launch_gemm_tc's result.
TYPED_TEST(ActivationDtypeLinear, ManyRowsOfHalfWeightsAndActivationsRunOnTensorCores) {
  using A = TypeParam;
  constexpr int kN = 70, kK = 136, kM = kLinearGemvMaxRows + 1;
  const std::vector<float> w = rounded<A>(random_values(51, kM, kN * kK, 1.0f / 12));
  const std::vector<float> x = rounded<A>(random_values(52, kM, std::size_t(kM) * kK, 1.0f));
  DeviceBuffer<A> d_w = upload<A>(w), d_x = upload<A>(x);
  DeviceBuffer<float> via_linear(std::size_t(kM) * kN), via_tc(std::size_t(kM) * kN);
  launch_linear<A, A, float>(d_w.get(), d_x.get(), via_linear.get(), kM, kN, kK, nullptr,
                             Epilogue::kStore);
  launch_gemm_tc<A, float>(d_w.get(), d_x.get(), via_tc.get(), kM, kN, kK, nullptr,
                           Epilogue::kStore);
  EXPECT_EQ(via_linear.to_host(), via_tc.to_host());
}

// The quantized linear with A activations: true W4A16 / W8A16, chunk path and general path.
TYPED_TEST(ActivationDtypeLinear, QuantLinearTakesHalfActivations) {
  using A = TypeParam;
  for (int m : {1, 5, kQuantLinearGemvMaxRows + 3}) {
    for (Epilogue e : {Epilogue::kStore, Epilogue::kAccumulate}) {
      testing::QuantCase llama;  // INT4, group 128, symmetric: the chunk path
      llama.batch = m;
      llama.rows = 40;
      llama.cols = 256;
      llama.scheme = quant::QuantScheme{4, 128, true};
      llama.epilogue = e;
      testing::QuantCase odd = llama;  // INT8, odd width, act-order: the general path
      odd.cols = 172;
      odd.scheme = quant::QuantScheme{8, 32, false};
      odd.act_order = true;
      for (const testing::QuantCase& c : {llama, odd}) {
        testing::QuantLinearProblem p(c, 49);
        const std::vector<float> x = rounded<A>(p.x);
        const std::vector<float> y0 = e == Epilogue::kAccumulate
                                          ? rounded<A>(p.y_initial)
                                          : std::vector<float>(p.y_initial.size(), 0.0f);
        std::vector<float> want(y0.size());
        // Beyond the GEMV rows the tensor cores multiply W's dequantized tiles rounded to A.
        const std::vector<float> w = m > kQuantLinearGemvMaxRows ? rounded<A>(p.w_dequantized)
                                                                 : p.w_dequantized;
        oracle::matmul(x.data(), w.data(), m, c.cols, c.rows, want.data());
        for (std::size_t i = 0; i < want.size(); ++i) want[i] += y0[i];
        DeviceBuffer<A> d_x = upload<A>(x), d_y = upload<A>(y0);
        launch_quant_linear<A, A>(p.view(), d_x.get(), d_y.get(), m, nullptr, e);
        testing::expect_within(download(d_y), want, store_tolerance<A>(), c.label());
      }
    }
  }
}

}  // namespace
}  // namespace nanoserve
