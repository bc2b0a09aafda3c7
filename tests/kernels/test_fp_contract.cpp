// FMA contraction of a*b + c in device code: nvcc contracts by default, the simulator only in
// the build configured with NANOSERVE_SIM_FP_CONTRACT (kernels/sim/README.md). The inputs make
// the fused and the separately rounded results differ: (1 + 2^-13)(1 - 2^-13) - 1 is -2^-26
// exactly, while the product alone rounds to 1 in fp32.
#include <vector>

#include "tests/kernels/kernel_test_support.h"

namespace nanoserve {
namespace {

using FpContract = testing::DeviceTest;

// in: (3,) a, b, c ; out: (2,) a*b + c as written, and with __fmul_rn / __fadd_rn (never fused)
__global__ void multiply_add_kernel(const float* in, float* out) {
  out[0] = in[0] * in[1] + in[2];
  out[1] = __fadd_rn(__fmul_rn(in[0], in[1]), in[2]);
}

TEST_F(FpContract, MultiplyAddIsFusedExactlyWhenContractionIsOn) {
  const testing::DeviceBuffer<float> in(
      std::vector<float>{1.0f + 0x1p-13f, 1.0f - 0x1p-13f, -1.0f});
  testing::DeviceBuffer<float> out(2);
  launch(multiply_add_kernel, dim3(1), dim3(1), 0, nullptr, in.get(), out.get());
  const std::vector<float> got = out.to_host();
#if NANOSERVE_REAL_CUDA || defined(NANOSERVE_SIM_FP_CONTRACT)
  EXPECT_EQ(got[0], -0x1p-26f);
#else
  EXPECT_EQ(got[0], 0.0f);
#endif
  EXPECT_EQ(got[1], 0.0f);  // the _rn intrinsics are never contracted
}

}  // namespace
}  // namespace nanoserve
