// Device math used by kernels: bit intrinsics (exact, hand-computed values), fast-math float
// intrinsics and the half/bfloat16 functions that CUDA 13 declares device-only (within a
// couple of units in the last place, since a GPU uses approximations).
#include <cmath>
#include <type_traits>
#include <vector>

#include "tests/kernels/kernel_test_support.h"

namespace nanoserve {
namespace {

using DeviceMath = testing::DeviceTest;

// out: (12,) integer results
__global__ void bits_kernel(long long* out) {
  out[0] = __popc(0xf0f0u);
  out[1] = __popcll(0xffffffffffull);
  out[2] = __clz(1);
  out[3] = __clz(0);
  out[4] = __ffs(8);
  out[5] = __ffs(0);
  out[6] = __brev(1u);
  out[7] = __float_as_int(1.0f);
  out[8] = __umulhi(0x80000000u, 6u);
  out[9] = __float2int_rn(2.5f);  // ties to even
  out[10] = __float2int_rn(-3.5f);
  out[11] = min(-3, 4) + 10 * max(2u, 7u);
}

TEST_F(DeviceMath, BitIntrinsicsMatchHandComputedValues) {
  testing::DeviceBuffer<long long> out(12);
  launch(bits_kernel, dim3(1), dim3(1), 0, nullptr, out.get());
  const std::vector<long long> got = out.to_host();
  EXPECT_EQ(got[0], 8);
  EXPECT_EQ(got[1], 40);
  EXPECT_EQ(got[2], 31);
  EXPECT_EQ(got[3], 32);
  EXPECT_EQ(got[4], 4);
  EXPECT_EQ(got[5], 0);
  EXPECT_EQ(got[6], 0x80000000ll);
  EXPECT_EQ(got[7], 0x3f800000ll);
  EXPECT_EQ(got[8], 3);  // 2^31 * 6 = 3 * 2^32
  EXPECT_EQ(got[9], 2);
  EXPECT_EQ(got[10], -4);
  EXPECT_EQ(got[11], -3 + 70);
}

// out: (6,) float results
__global__ void float_kernel(float* out) {
  out[0] = __expf(1.0f);
  out[1] = rsqrtf(4.0f);
  out[2] = __fdividef(1.0f, 3.0f);
  out[3] = __saturatef(1.5f) + 10.0f * __saturatef(-2.0f);
  out[4] = __logf(8.0f);
  out[5] = fmaxf(min(2.0f, 3.0f), -1.0f);
}

TEST_F(DeviceMath, FastFloatIntrinsicsAreCloseToTheirDefinitions) {
  testing::DeviceBuffer<float> out(6);
  launch(float_kernel, dim3(1), dim3(1), 0, nullptr, out.get());
  const std::vector<float> got = out.to_host();
  // __expf has at most 2 + 1.16|x| ulp of error on a GPU (CUDA math API): a 1e-6 relative
  // tolerance covers it.
  EXPECT_NEAR(got[0], 2.718281828f, 2.7e-6f);
  EXPECT_NEAR(got[1], 0.5f, 1e-6f);
  EXPECT_NEAR(got[2], 1.0f / 3.0f, 1e-6f);
  EXPECT_EQ(got[3], 1.0f);
  EXPECT_NEAR(got[4], 2.0794415f, 1e-5f);
  EXPECT_EQ(got[5], 2.0f);
}

// in: (n,) ; out: (8, n) results of the device-only half math
template <typename T>
__global__ void low_precision_kernel(const float* in, float* out, int n) {
  const int i = static_cast<int>(threadIdx.x);
  if (i >= n) return;
  T x;
  T one;
  if constexpr (std::is_same<T, __half>::value) {
    x = __float2half_rn(in[i]);
    one = __float2half_rn(1.0f);
  } else {
    x = __float2bfloat16_rn(in[i]);
    one = __float2bfloat16_rn(1.0f);
  }
  const auto f = [](T v) {
    if constexpr (std::is_same<T, __half>::value)
      return __half2float(v);
    else
      return __bfloat162float(v);
  };
  out[0 * n + i] = f(hexp(x));
  out[1 * n + i] = f(hsqrt(x));
  out[2 * n + i] = f(hrsqrt(x));
  out[3 * n + i] = f(hlog(x));
  out[4 * n + i] = f(htanh(x));
  out[5 * n + i] = f(__hfma(x, x, one));
  out[6 * n + i] = f(hrcp(x));
  out[7 * n + i] = f(hfloor(x));
}

template <typename T>
void check_low_precision(double ulp) {
  const std::vector<float> in = {0.5f, 1.0f, 1.75f, 2.0f, 3.0f, 0.125f, 5.5f};
  const int n = static_cast<int>(in.size());
  testing::DeviceBuffer<float> d_in(in);
  testing::DeviceBuffer<float> d_out(8 * n);
  launch(low_precision_kernel<T>, dim3(1), dim3(32), 0, nullptr, d_in.get(), d_out.get(), n);
  const std::vector<float> got = d_out.to_host();
  for (int i = 0; i < n; ++i) {
    const double x = in[i];  // exactly representable in both types
    const double want[8] = {std::exp(x), std::sqrt(x), 1.0 / std::sqrt(x),
                            std::log(x), std::tanh(x), x * x + 1.0,
                            1.0 / x,     std::floor(x)};
    for (int k = 0; k < 8; ++k) {
      // Two units in the last place of the storage type: one for rounding the exact result,
      // one for the GPU's approximation.
      EXPECT_NEAR(got[k * n + i], want[k], 2.0 * ulp * std::fabs(want[k]) + 1e-7)
          << "function " << k << " at x=" << x;
    }
  }
}

TEST_F(DeviceMath, HalfMathIsWithinTwoUlp) { check_low_precision<__half>(1.0 / 1024); }
TEST_F(DeviceMath, Bfloat16MathIsWithinTwoUlp) { check_low_precision<__nv_bfloat16>(1.0 / 128); }

}  // namespace
}  // namespace nanoserve
