// RMSNorm, every version and storage type, against oracle::rmsnorm on the storage-rounded gain.
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/oracle/ops.h"
#include "common/tolerances.h"
#include "kernels/device_buffer.h"
#include "kernels/rmsnorm.h"
#include "tests/kernels/kernel_oracle_support.h"
#include "tests/kernels/kernel_test_support.h"

namespace nanoserve {
namespace {

using testing::random_values;
using testing::to_floats;
using testing::to_storage;

template <typename T>
class RmsnormTyped : public testing::DeviceTest {};
TYPED_TEST_SUITE(RmsnormTyped, testing::StorageTypes, testing::StorageTypeNames);

TYPED_TEST(RmsnormTyped, EveryVersionMatchesTheOracleOnAwkwardSizes) {
  using T = TypeParam;
  constexpr float kEps = 1e-5f;
  for (int rows : {1, 3, 17}) {
    // Below, at and above a warp, a block (256) and v02's auto limit (1024).
    for (int dim : {1, 3, 17, 129, 257, 1025}) {
      const std::vector<float> x = random_values(2, rows * 10000 + dim, std::size_t(rows) * dim,
                                                 3.0f, 0.5f);
      const std::vector<T> gain = to_storage<T>(random_values(3, dim, dim, 0.2f, 1.0f));
      std::vector<float> want(x.size());
      oracle::rmsnorm(x.data(), to_floats(gain).data(), rows, dim, kEps, want.data());
      DeviceBuffer<float> d_x(x);
      DeviceBuffer<T> d_gain(gain);
      for (int version = 0; version <= kRmsnormVersions; ++version) {
        DeviceBuffer<float> d_out(x.size());
        launch_rmsnorm(d_x.get(), d_gain.get(), rows, dim, kEps, d_out.get(), nullptr, version);
        testing::expect_close(d_out.to_host(), want, tol::kKernelVsOracle,
                              "v" + std::to_string(version) + " rows=" + std::to_string(rows) +
                                  " dim=" + std::to_string(dim));
      }
    }
  }
}

TEST(Rmsnorm, WorksInPlaceInEveryVersion) {
  if (!testing::have_device()) GTEST_SKIP() << "no CUDA device on this machine";
  constexpr int kRows = 3, kDim = 300;
  const std::vector<float> x = random_values(4, 0, kRows * kDim, 1.0f);
  const std::vector<float> gain = random_values(4, 1, kDim, 0.2f, 1.0f);
  std::vector<float> want(x.size());
  oracle::rmsnorm(x.data(), gain.data(), kRows, kDim, 1e-6f, want.data());
  DeviceBuffer<float> d_gain(gain);
  for (int version = 1; version <= kRmsnormVersions; ++version) {
    DeviceBuffer<float> d_x(x);
    launch_rmsnorm(d_x.get(), d_gain.get(), kRows, kDim, 1e-6f, d_x.get(), nullptr, version);
    testing::expect_close(d_x.to_host(), want, tol::kKernelVsOracle, "v" + std::to_string(version));
  }
}

TEST(Rmsnorm, NormalisesAHandComputedRow) {
  if (!testing::have_device()) GTEST_SKIP() << "no CUDA device on this machine";
  // x = (3, 4): mean(x²) = 12.5, so out = x / sqrt(12.5) * gain.
  DeviceBuffer<float> d_x(std::vector<float>{3, 4});
  DeviceBuffer<float> d_gain(std::vector<float>{1, 2});
  DeviceBuffer<float> d_out(2);
  launch_rmsnorm(d_x.get(), d_gain.get(), 1, 2, 0.0f, d_out.get(), nullptr, 2);
  const std::vector<float> got = d_out.to_host();
  EXPECT_NEAR(got[0], 3.0 / std::sqrt(12.5), 1e-6);
  EXPECT_NEAR(got[1], 8.0 / std::sqrt(12.5), 1e-6);
}

TEST(Rmsnorm, ZeroRowsLaunchNothing) {
  EXPECT_NO_THROW(launch_rmsnorm<float>(nullptr, nullptr, 0, 8, 1e-5f, nullptr, nullptr));
}

TEST(Rmsnorm, RejectsBadArguments) {
  EXPECT_THROW(launch_rmsnorm<float>(nullptr, nullptr, -1, 8, 1e-5f, nullptr, nullptr),
               std::invalid_argument);
  EXPECT_THROW(launch_rmsnorm<float>(nullptr, nullptr, 1, 0, 1e-5f, nullptr, nullptr),
               std::invalid_argument);
  EXPECT_THROW(launch_rmsnorm<float>(nullptr, nullptr, 1, 8, 1e-5f, nullptr, nullptr, 3),
               std::invalid_argument);
  EXPECT_THROW(launch_rmsnorm<float>(nullptr, nullptr, 1, 8, 1e-5f, nullptr, nullptr, -1),
               std::invalid_argument);
}

}  // namespace
}  // namespace nanoserve
