// residual_add against a host loop doing the same fp32 add and the same single rounding, so the
// results must match bit for bit in every storage type.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/residual_add.h"
#include "tests/kernels/kernel_test_support.h"

namespace nanoserve {
namespace {

using ResidualAdd = testing::DeviceTest;

float to_float(float v) { return v; }
float to_float(__half v) { return __half2float(v); }
float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T>
T from_float(float v);
template <>
float from_float<float>(float v) {
  return v;
}
template <>
__half from_float<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

template <typename T>
void check_sizes() {
  // Awkward sizes: 1, odd, around the 256-thread block, many blocks.
  for (std::int64_t n : {1, 3, 17, 129, 255, 256, 257, 1000, 70001}) {
    std::vector<T> x(static_cast<std::size_t>(n));
    std::vector<T> r(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) {
      x[i] = from_float<T>(std::sin(0.37f * static_cast<float>(i)) * 3.0f);
      r[i] = from_float<T>(std::cos(0.11f * static_cast<float>(i)) - 0.5f);
    }
    testing::DeviceBuffer<T> dx(x);
    testing::DeviceBuffer<T> dr(r);
    launch_residual_add(dx.get(), dr.get(), n, nullptr);
    const std::vector<T> got = dx.to_host();
    std::int64_t bad = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      const T want = from_float<T>(to_float(x[i]) + to_float(r[i]));
      if (std::memcmp(&got[i], &want, sizeof(T)) != 0 && bad++ < 3) {
        ADD_FAILURE() << "n=" << n << " i=" << i << " got " << to_float(got[i]) << " want "
                      << to_float(want);
      }
    }
    EXPECT_EQ(bad, 0) << "n=" << n;
  }
}

TEST_F(ResidualAdd, MatchesHostLoopBitForBitInFp32) { check_sizes<float>(); }
TEST_F(ResidualAdd, MatchesHostLoopBitForBitInFp16) { check_sizes<__half>(); }
TEST_F(ResidualAdd, MatchesHostLoopBitForBitInBf16) { check_sizes<__nv_bfloat16>(); }

TEST_F(ResidualAdd, ZeroElementsLaunchesNothing) {
  EXPECT_NO_THROW(launch_residual_add<float>(nullptr, nullptr, 0, nullptr));
}

TEST_F(ResidualAdd, RejectsNegativeCount) {
  EXPECT_THROW(launch_residual_add<float>(nullptr, nullptr, -1, nullptr), std::invalid_argument);
}

}  // namespace
}  // namespace nanoserve
