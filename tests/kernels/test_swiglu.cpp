// SwiGLU against oracle::swiglu.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/oracle/ops.h"
#include "common/tolerances.h"
#include "kernels/device_buffer.h"
#include "kernels/swiglu.h"
#include "tests/kernels/kernel_oracle_support.h"
#include "tests/kernels/kernel_test_support.h"

namespace nanoserve {
namespace {

using testing::random_values;

using Swiglu = testing::DeviceTest;

TEST_F(Swiglu, MatchesTheOracleOnAwkwardSizes) {
  // Sizes around a warp and the 256-thread block, and one spanning many blocks.
  for (int n : {1, 3, 17, 129, 257, 70001}) {
    const std::vector<float> gate = random_values(7, n, n, 8.0f);  // silu's tails and middle
    const std::vector<float> up = random_values(8, n, n, 2.0f);
    std::vector<float> want(n);
    oracle::swiglu(gate.data(), up.data(), n, want.data());
    DeviceBuffer<float> d_gate(gate), d_up(up), d_out(n);
    launch_swiglu(d_gate.get(), d_up.get(), n, d_out.get(), nullptr);
    testing::expect_close(d_out.to_host(), want, tol::kKernelVsOracle, "n=" + std::to_string(n));
  }
}

TEST_F(Swiglu, WorksInPlaceOverTheGate) {
  const std::vector<float> gate = {-2, 0, 1, 30}, up = {1, 5, 2, 0.5f};
  std::vector<float> want(4);
  oracle::swiglu(gate.data(), up.data(), 4, want.data());
  DeviceBuffer<float> d_gate(gate), d_up(up);
  launch_swiglu(d_gate.get(), d_up.get(), 4, d_gate.get(), nullptr);
  testing::expect_close(d_gate.to_host(), want, tol::kKernelVsOracle, "in place");
  EXPECT_EQ(d_gate.to_host()[1], 0.0f);  // silu(0) = 0
}

TEST(SwigluArgs, ZeroLaunchesNothingAndNegativeIsRejected) {
  EXPECT_NO_THROW(launch_swiglu(nullptr, nullptr, 0, nullptr, nullptr));
  EXPECT_THROW(launch_swiglu(nullptr, nullptr, -1, nullptr, nullptr), std::invalid_argument);
}

}  // namespace
}  // namespace nanoserve
