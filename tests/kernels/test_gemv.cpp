// GEMV (decode, y_b = W x_b): every version in every storage type against oracle::gemv on the
// dequantized weights, over awkward sizes and batches; a hand-computed exact case; the store and
// accumulate epilogues; v03's scalar fallback; and the argument checks.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/allclose.h"
#include "common/oracle/ops.h"
#include "common/tolerances.h"
#include "kernels/gemv.h"
#include "tests/kernels/kernel_test_support.h"
#include "tests/kernels/linear_test_support.h"

namespace nanoserve {
namespace {

using testing::LinearProblem;

template <typename T>
class Gemv : public testing::DeviceTest {};
TYPED_TEST_SUITE(Gemv, testing::StorageTypes, testing::StorageTypeNames);

// The reference: one oracle::gemv per batch row, on the dequantized weights.
template <typename T>
std::vector<float> reference(const LinearProblem<T>& p) {
  std::vector<float> y(static_cast<std::size_t>(p.rows) * p.n);
  for (int b = 0; b < p.rows; ++b) {
    oracle::gemv(p.w_dequantized.data(), p.x.data() + static_cast<std::size_t>(b) * p.k, p.n,
                 p.k, y.data() + static_cast<std::size_t>(b) * p.n);
  }
  return p.apply_epilogue_on_host(y);
}

// Runs `version` on a fresh random problem and compares with the oracle.
template <typename T>
void expect_matches_oracle(int version, int batch, int out_dim, int in_dim, Epilogue epilogue,
                           std::uint64_t seed) {
  LinearProblem<T> p(batch, out_dim, in_dim, epilogue, seed);
  launch_gemv_version(version, p.dw.get(), p.dx.get(), p.dy.get(), batch, out_dim, in_dim,
                      nullptr, epilogue);
  const CloseResult r = allclose(p.result(), reference(p), tol::kFp32DotReorder);
  EXPECT_TRUE(r.ok) << "v0" << version << " " << dtype_name(dtype_of<T>()) << " batch=" << batch
                    << " out_dim=" << out_dim << " in_dim=" << in_dim
                    << (epilogue == Epilogue::kAccumulate ? " accumulate" : "") << ": "
                    << r.summary();
}

TYPED_TEST(Gemv, EveryVersionMatchesOracleOnAwkwardSizes) {
  // (out_dim, in_dim): single elements; in_dim not a multiple of 4, 8 or 32 (scalar loads in
  // v03); multiples of 8 that leave v03 a partial warp (96), a partial unrolled step (1000) or
  // both main loop and tail (2056); out_dim not a multiple of v03's 8 rows per block.
  const std::vector<std::pair<int, int>> shapes = {
      {1, 1},     {3, 17},  {17, 3},   {1, 1000}, {129, 257},
      {257, 129}, {33, 96}, {67, 1001}, {40, 2056}};
  for (int version = 1; version <= kGemvVersions; ++version) {
    for (const auto& [out_dim, in_dim] : shapes) {
      for (int batch : {1, 2, 3, 9}) {
        expect_matches_oracle<TypeParam>(version, batch, out_dim, in_dim, Epilogue::kStore,
                                         1000 * version + out_dim + in_dim + batch);
      }
    }
  }
}

TYPED_TEST(Gemv, EveryVersionAccumulatesIntoY) {
  for (int version = 1; version <= kGemvVersions; ++version) {
    expect_matches_oracle<TypeParam>(version, 3, 37, 264, Epilogue::kAccumulate, 7 + version);
  }
}

TYPED_TEST(Gemv, BatchLargerThanOnePassIsSplitIntoPasses) {
  // v03 serves kGemvMaxBatch vectors per pass over W; 17 and 35 need a second and third pass.
  for (int batch : {kGemvMaxBatch, kGemvMaxBatch + 1, 2 * kGemvMaxBatch + 3}) {
    expect_matches_oracle<TypeParam>(3, batch, 19, 136, Epilogue::kStore, 40 + batch);
    expect_matches_oracle<TypeParam>(3, batch, 19, 136, Epilogue::kAccumulate, 80 + batch);
  }
}

TYPED_TEST(Gemv, V03FallsBackToScalarLoadsForMisalignedWeights) {
  // in_dim = 128 allows 16-byte loads, but W starting one element into its allocation does not:
  // the launcher must notice and use one-element loads.
  using T = TypeParam;
  const int out_dim = 21;
  const int in_dim = 128;
  LinearProblem<T> p(2, out_dim, in_dim, Epilogue::kStore, 99);
  std::vector<T> shifted(p.w.size() + 1, from_float<T>(0.0f));
  std::copy(p.w.begin(), p.w.end(), shifted.begin() + 1);
  DeviceBuffer<T> dw(shifted);
  launch_gemv_v03(dw.get() + 1, p.dx.get(), p.dy.get(), 2, out_dim, in_dim, nullptr);
  const CloseResult r = allclose(p.result(), reference(p), tol::kFp32DotReorder);
  EXPECT_TRUE(r.ok) << r.summary();
}

TYPED_TEST(Gemv, HandComputedProductIsExact) {
  // W = [[1, 2, 3], [4, 5, 6]], x_0 = [1, -1, 0.5], x_1 = [2, 0, 1]:
  // y_0 = [1 - 2 + 1.5, 4 - 5 + 3] = [0.5, 2], y_1 = [2 + 3, 8 + 6] = [5, 14].
  // Every value and partial sum is exact in fp32, and the weights are exact in fp16 and bf16.
  using T = TypeParam;
  std::vector<T> w;
  for (float v : {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f}) w.push_back(from_float<T>(v));
  const std::vector<float> x = {1.0f, -1.0f, 0.5f, 2.0f, 0.0f, 1.0f};
  const std::vector<float> want = {0.5f, 2.0f, 5.0f, 14.0f};
  const DeviceBuffer<T> dw(w);
  const DeviceBuffer<float> dx(x);
  for (int version = 1; version <= kGemvVersions; ++version) {
    DeviceBuffer<float> dy(4);
    launch_gemv_version(version, dw.get(), dx.get(), dy.get(), 2, 2, 3, nullptr);
    EXPECT_EQ(dy.to_host(), want) << "v0" << version;
  }
}

TYPED_TEST(Gemv, EmptyInputDimensionGivesZerosOrLeavesYUnchanged) {
  // in_dim = 0: every dot product is an empty sum (0); W and X may be null.
  using T = TypeParam;
  for (int version = 1; version <= kGemvVersions; ++version) {
    DeviceBuffer<float> dy(std::vector<float>{7.0f, -1.0f, 3.0f, 4.0f, 5.0f, 6.0f});
    launch_gemv_version<T>(version, nullptr, nullptr, dy.get(), 2, 3, 0, nullptr,
                           Epilogue::kAccumulate);
    EXPECT_EQ(dy.to_host(), (std::vector<float>{7.0f, -1.0f, 3.0f, 4.0f, 5.0f, 6.0f}))
        << "v0" << version;
    launch_gemv_version<T>(version, nullptr, nullptr, dy.get(), 2, 3, 0, nullptr);
    EXPECT_EQ(dy.to_host(), std::vector<float>(6, 0.0f)) << "v0" << version;
  }
}

using GemvArgs = testing::DeviceTest;

TEST_F(GemvArgs, EmptyBatchOrOutputLaunchesNothing) {
  for (int version = 1; version <= kGemvVersions; ++version) {
    EXPECT_NO_THROW(launch_gemv_version<float>(version, nullptr, nullptr, nullptr, 0, 5, 5,
                                               nullptr));
    EXPECT_NO_THROW(launch_gemv_version<float>(version, nullptr, nullptr, nullptr, 5, 0, 5,
                                               nullptr));
  }
}

TEST_F(GemvArgs, RejectsNegativeSizesNamingTheArgument) {
  DeviceBuffer<float> buf(64);
  for (int version = 1; version <= kGemvVersions; ++version) {
    for (const auto& [batch, out_dim, in_dim, name] :
         std::vector<std::tuple<int, int, int, std::string>>{
             {-1, 4, 4, "rows = -1"}, {1, -4, 4, "out_dim = -4"}, {1, 4, -2, "in_dim = -2"}}) {
      try {
        launch_gemv_version<float>(version, buf.get(), buf.get(), buf.get(), batch, out_dim,
                                   in_dim, nullptr);
        ADD_FAILURE() << "v0" << version << " accepted " << name;
      } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
      }
    }
  }
}

TEST_F(GemvArgs, RejectsNullBuffers) {
  DeviceBuffer<float> buf(64);
  for (int version = 1; version <= kGemvVersions; ++version) {
    EXPECT_THROW(launch_gemv_version<float>(version, nullptr, buf.get(), buf.get(), 1, 4, 4,
                                            nullptr),
                 std::invalid_argument);
    EXPECT_THROW(launch_gemv_version<float>(version, buf.get(), nullptr, buf.get(), 1, 4, 4,
                                            nullptr),
                 std::invalid_argument);
    EXPECT_THROW(launch_gemv_version<float>(version, buf.get(), buf.get(), nullptr, 1, 4, 4,
                                            nullptr),
                 std::invalid_argument);
  }
}

TEST_F(GemvArgs, RejectsUnknownVersion) {
  DeviceBuffer<float> buf(4);
  for (int version : {0, kGemvVersions + 1}) {
    EXPECT_THROW(launch_gemv_version<float>(version, buf.get(), buf.get(), buf.get(), 1, 2, 2,
                                            nullptr),
                 std::invalid_argument);
  }
}

}  // namespace
}  // namespace nanoserve
