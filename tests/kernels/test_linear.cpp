// launch_linear: matches the oracle on both sides of the GEMV/GEMM switch, and really takes the
// GEMV path up to kLinearGemvMaxRows rows and the GEMM path beyond (same inputs through a
// deterministic kernel give the same bits).
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "common/allclose.h"
#include "common/oracle/ops.h"
#include "common/tolerances.h"
#include "kernels/gemm.h"
#include "kernels/gemv.h"
#include "kernels/linear.h"
#include "tests/kernels/kernel_test_support.h"
#include "tests/kernels/linear_test_support.h"

namespace nanoserve {
namespace {

using testing::LinearProblem;

template <typename T>
class Linear : public testing::DeviceTest {};
TYPED_TEST_SUITE(Linear, testing::StorageTypes, testing::StorageTypeNames);

TYPED_TEST(Linear, MatchesOracleOnBothSidesOfTheGemvGemmSwitch) {
  for (int m : {1, 5, kLinearGemvMaxRows, kLinearGemvMaxRows + 1, 67}) {
    for (Epilogue epilogue : {Epilogue::kStore, Epilogue::kAccumulate}) {
      LinearProblem<TypeParam> p(m, 45, 200, epilogue, 300 + m);
      launch_linear(p.dw.get(), p.dx.get(), p.dy.get(), m, p.n, p.k, nullptr, epilogue);
      std::vector<float> want(static_cast<std::size_t>(m) * p.n);
      oracle::matmul(p.x.data(), p.w_dequantized.data(), m, p.k, p.n, want.data());
      const CloseResult r =
          allclose(p.result(), p.apply_epilogue_on_host(want), tol::kFp32DotReorder);
      EXPECT_TRUE(r.ok) << "m=" << m << ": " << r.summary();
    }
  }
}

TYPED_TEST(Linear, UsesGemvUpToTheThresholdAndGemmBeyond) {
  for (int m : {kLinearGemvMaxRows, kLinearGemvMaxRows + 1}) {
    LinearProblem<TypeParam> p(m, 29, 136, Epilogue::kStore, 17);
    launch_linear(p.dw.get(), p.dx.get(), p.dy.get(), m, p.n, p.k, nullptr);
    const std::vector<float> got = p.result();
    if (m <= kLinearGemvMaxRows) {
      launch_gemv(p.dw.get(), p.dx.get(), p.dy.get(), m, p.n, p.k, nullptr);
    } else {
      launch_gemm(p.dw.get(), p.dx.get(), p.dy.get(), m, p.n, p.k, nullptr);
    }
    const std::vector<float> want = p.result();
    EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0)
        << "m=" << m << " did not take the " << (m <= kLinearGemvMaxRows ? "GEMV" : "GEMM")
        << " path";
  }
}

using LinearArgs = testing::DeviceTest;

TEST_F(LinearArgs, RejectsNegativeSizesAndAcceptsEmptyOnes) {
  EXPECT_THROW(launch_linear<float>(nullptr, nullptr, nullptr, -1, 2, 2, nullptr),
               std::invalid_argument);
  EXPECT_THROW(launch_linear<float>(nullptr, nullptr, nullptr, 100, 2, -2, nullptr),
               std::invalid_argument);
  EXPECT_NO_THROW(launch_linear<float>(nullptr, nullptr, nullptr, 0, 2, 2, nullptr));
}

}  // namespace
}  // namespace nanoserve
