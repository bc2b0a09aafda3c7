// GEMM (prefill, Y = X Wᵀ): every version in every storage type against oracle::matmul on the
// dequantized weights, over awkward sizes (partial tiles in m, n and k); a hand-computed exact
// case; the store and accumulate epilogues; the argument checks.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "common/allclose.h"
#include "common/oracle/ops.h"
#include "common/tolerances.h"
#include "kernels/gemm.h"
#include "tests/kernels/kernel_test_support.h"
#include "tests/kernels/linear_test_support.h"

namespace nanoserve {
namespace {

using testing::LinearProblem;

template <typename T>
class Gemm : public testing::DeviceTest {};
TYPED_TEST_SUITE(Gemm, testing::StorageTypes, testing::StorageTypeNames);

template <typename T>
std::vector<float> reference(const LinearProblem<T>& p) {
  std::vector<float> y(static_cast<std::size_t>(p.rows) * p.n);
  oracle::matmul(p.x.data(), p.w_dequantized.data(), p.rows, p.k, p.n, y.data());
  return p.apply_epilogue_on_host(y);
}

template <typename T>
void expect_matches_oracle(int version, int m, int n, int k, Epilogue epilogue,
                           std::uint64_t seed) {
  LinearProblem<T> p(m, n, k, epilogue, seed);
  launch_gemm_version(version, p.dw.get(), p.dx.get(), p.dy.get(), m, n, k, nullptr, epilogue);
  const CloseResult r = allclose(p.result(), reference(p), tol::kFp32DotReorder);
  EXPECT_TRUE(r.ok) << "v0" << version << " " << dtype_name(dtype_of<T>()) << " m=" << m
                    << " n=" << n << " k=" << k
                    << (epilogue == Epilogue::kAccumulate ? " accumulate" : "") << ": "
                    << r.summary();
}

TYPED_TEST(Gemm, EveryVersionMatchesOracleOnAwkwardSizes) {
  // (m, n, k) around the tiles (16 for v02; 64 x 64 x 16 for v03): single elements, one
  // partial tile, exact tiles, one past a tile in every dimension, k much longer than a tile
  // and not a multiple of 4, 8 or 32.
  const std::vector<std::tuple<int, int, int>> shapes = {
      {1, 1, 1},    {1, 17, 3},   {3, 1, 129},  {17, 33, 257}, {16, 16, 16},
      {64, 64, 64}, {65, 63, 17}, {67, 129, 33}, {2, 257, 40}, {33, 5, 1001}};
  for (int version = 1; version <= kGemmVersions; ++version) {
    for (const auto& [m, n, k] : shapes) {
      expect_matches_oracle<TypeParam>(version, m, n, k, Epilogue::kStore,
                                       1000 * version + m + n + k);
    }
  }
}

TYPED_TEST(Gemm, EveryVersionAccumulatesIntoY) {
  for (int version = 1; version <= kGemmVersions; ++version) {
    expect_matches_oracle<TypeParam>(version, 37, 70, 48, Epilogue::kAccumulate, 5 + version);
  }
}

TYPED_TEST(Gemm, HandComputedProductIsExact) {
  // X = [[1, -1, 0.5], [2, 0, 1]], W = [[1, 2, 3], [4, 5, 6]]:
  // Y = [[1 - 2 + 1.5, 4 - 5 + 3], [2 + 3, 8 + 6]] = [[0.5, 2], [5, 14]], exact in fp32, and
  // the weights are exact in fp16 and bf16.
  using T = TypeParam;
  std::vector<T> w;
  for (float v : {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f}) w.push_back(from_float<T>(v));
  const DeviceBuffer<T> dw(w);
  const DeviceBuffer<float> dx(std::vector<float>{1.0f, -1.0f, 0.5f, 2.0f, 0.0f, 1.0f});
  for (int version = 1; version <= kGemmVersions; ++version) {
    DeviceBuffer<float> dy(4);
    launch_gemm_version(version, dw.get(), dx.get(), dy.get(), 2, 2, 3, nullptr);
    EXPECT_EQ(dy.to_host(), (std::vector<float>{0.5f, 2.0f, 5.0f, 14.0f})) << "v0" << version;
  }
}

TYPED_TEST(Gemm, EmptyReductionGivesZerosOrLeavesYUnchanged) {
  using T = TypeParam;
  for (int version = 1; version <= kGemmVersions; ++version) {
    DeviceBuffer<float> dy(std::vector<float>{7.0f, -1.0f, 3.0f, 4.0f, 5.0f, 6.0f});
    launch_gemm_version<T>(version, nullptr, nullptr, dy.get(), 3, 2, 0, nullptr,
                           Epilogue::kAccumulate);
    EXPECT_EQ(dy.to_host(), (std::vector<float>{7.0f, -1.0f, 3.0f, 4.0f, 5.0f, 6.0f}))
        << "v0" << version;
    launch_gemm_version<T>(version, nullptr, nullptr, dy.get(), 3, 2, 0, nullptr);
    EXPECT_EQ(dy.to_host(), std::vector<float>(6, 0.0f)) << "v0" << version;
  }
}

using GemmArgs = testing::DeviceTest;

TEST_F(GemmArgs, EmptyOutputLaunchesNothing) {
  for (int version = 1; version <= kGemmVersions; ++version) {
    EXPECT_NO_THROW(launch_gemm_version<float>(version, nullptr, nullptr, nullptr, 0, 5, 5,
                                               nullptr));
    EXPECT_NO_THROW(launch_gemm_version<float>(version, nullptr, nullptr, nullptr, 5, 0, 5,
                                               nullptr));
  }
}

TEST_F(GemmArgs, RejectsNegativeSizesNamingTheArgument) {
  DeviceBuffer<float> buf(64);
  for (int version = 1; version <= kGemmVersions; ++version) {
    for (const auto& [m, n, k, name] : std::vector<std::tuple<int, int, int, std::string>>{
             {-3, 4, 4, "rows = -3"}, {1, -1, 4, "out_dim = -1"}, {1, 4, -7, "in_dim = -7"}}) {
      try {
        launch_gemm_version<float>(version, buf.get(), buf.get(), buf.get(), m, n, k, nullptr);
        ADD_FAILURE() << "v0" << version << " accepted " << name;
      } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
      }
    }
  }
}

TEST_F(GemmArgs, RejectsNullBuffersAndUnknownVersion) {
  DeviceBuffer<float> buf(64);
  for (int version = 1; version <= kGemmVersions; ++version) {
    EXPECT_THROW(launch_gemm_version<float>(version, nullptr, buf.get(), buf.get(), 2, 2, 2,
                                            nullptr),
                 std::invalid_argument);
    EXPECT_THROW(launch_gemm_version<float>(version, buf.get(), nullptr, buf.get(), 2, 2, 2,
                                            nullptr),
                 std::invalid_argument);
    EXPECT_THROW(launch_gemm_version<float>(version, buf.get(), buf.get(), nullptr, 2, 2, 2,
                                            nullptr),
                 std::invalid_argument);
  }
  EXPECT_THROW(launch_gemm_version<float>(0, buf.get(), buf.get(), buf.get(), 2, 2, 2, nullptr),
               std::invalid_argument);
}

}  // namespace
}  // namespace nanoserve
