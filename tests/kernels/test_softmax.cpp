// Softmax, every version, against oracle::softmax.
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/oracle/ops.h"
#include "common/tolerances.h"
#include "kernels/device_buffer.h"
#include "kernels/softmax.h"
#include "tests/kernels/kernel_oracle_support.h"
#include "tests/kernels/kernel_test_support.h"

namespace nanoserve {
namespace {

using testing::random_values;

using Softmax = testing::DeviceTest;

TEST_F(Softmax, EveryVersionMatchesTheOracleOnAwkwardSizes) {
  for (int rows : {1, 3}) {
    for (int n : {1, 3, 17, 129, 257, 1000}) {
      std::vector<float> x = random_values(9, rows * 10000 + n, std::size_t(rows) * n, 10.0f);
      // Masked entries (probability 0), but never a row's first value: no row is all -inf.
      for (std::size_t i = 1; i < x.size(); i += 7) {
        if (i % n != 0) x[i] = -INFINITY;
      }
      std::vector<float> want(x.size());
      oracle::softmax(x.data(), rows, n, want.data());
      DeviceBuffer<float> d_x(x);
      for (int version = 0; version <= kSoftmaxVersions; ++version) {
        DeviceBuffer<float> d_out(x.size());
        launch_softmax(d_x.get(), rows, n, d_out.get(), nullptr, version);
        testing::expect_close(d_out.to_host(), want, tol::kKernelVsOracle,
                              "v" + std::to_string(version) + " rows=" + std::to_string(rows) +
                                  " n=" + std::to_string(n));
      }
    }
  }
}

TEST_F(Softmax, HugeLogitsDoNotOverflow) {
  // exp(1000) overflows fp32; subtracting the max first keeps every exponent <= 0.
  // x[1] - x[0] is ~log 3 (exactly, in double, whatever fp32 made of it): p ~ (0.2, 0.6, 0, 0.2).
  const std::vector<float> x = {1000, 1000 + std::log(3.0f), -INFINITY, 1000};
  const double w1 = std::exp(double(x[1]) - double(x[0]));
  const double want[4] = {1 / (2 + w1), w1 / (2 + w1), 0, 1 / (2 + w1)};
  for (int version = 1; version <= kSoftmaxVersions; ++version) {
    DeviceBuffer<float> d_x(x);
    launch_softmax(d_x.get(), 1, 4, d_x.get(), nullptr, version);  // in place
    const std::vector<float> got = d_x.to_host();
    for (int i = 0; i < 4; ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << "v" << version << " i=" << i;
    EXPECT_NEAR(got[1], 0.6, 1e-4) << "v" << version;
  }
}

TEST(SoftmaxArgs, RejectsBadArguments) {
  EXPECT_NO_THROW(launch_softmax(nullptr, 0, 5, nullptr, nullptr));
  EXPECT_THROW(launch_softmax(nullptr, -1, 5, nullptr, nullptr), std::invalid_argument);
  EXPECT_THROW(launch_softmax(nullptr, 1, 0, nullptr, nullptr), std::invalid_argument);
  EXPECT_THROW(launch_softmax(nullptr, 1, 5, nullptr, nullptr, 3), std::invalid_argument);
}

}  // namespace
}  // namespace nanoserve
