// launch_quant_linear: the quantized GEMV below kQuantLinearGemvMaxRows rows and the quantized
// GEMM above, both against oracle::matmul on the dequantized weights, on a Llama-like INT4
// group-128 layer (chunk path) and an odd-width act-order one (general path), with store and
// accumulate.
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "common/allclose.h"
#include "common/tolerances.h"
#include "kernels/qlinear.h"
#include "tests/kernels/kernel_test_support.h"
#include "tests/kernels/quant_linear_test_support.h"

namespace nanoserve {
namespace {

using testing::QuantCase;
using testing::QuantLinearProblem;

using QuantLinear = testing::DeviceTest;

void expect_matches_oracle(const QuantCase& c, std::uint64_t seed) {
  QuantLinearProblem p(c, seed);
  launch_quant_linear(p.view(), p.dx.get(), p.dy.get(), c.batch, nullptr, c.epilogue);
  const CloseResult r = allclose(p.result(), p.reference(), tol::kFp32DotReorder);
  EXPECT_TRUE(r.ok) << c.label() << ": " << r.summary();
}

TEST_F(QuantLinear, MatchesOracleOnBothSidesOfTheGemvGemmSwitch) {
  for (int m : {1, kQuantLinearGemvMaxRows, kQuantLinearGemvMaxRows + 1, 67}) {
    for (Epilogue e : {Epilogue::kStore, Epilogue::kAccumulate}) {
      QuantCase llama;  // INT4, group 128, symmetric: the chapter's default format
      llama.batch = m;
      llama.rows = 40;
      llama.cols = 256;
      llama.scheme = quant::QuantScheme{4, 128, true};
      llama.epilogue = e;
      expect_matches_oracle(llama, 10 + m);

      QuantCase gptq;  // INT8, group 32, asymmetric, act-order, stories260K's hidden width
      gptq.batch = m;
      gptq.rows = 9;
      gptq.cols = 172;
      gptq.scheme = quant::QuantScheme{8, 32, false};
      gptq.act_order = true;
      gptq.epilogue = e;
      expect_matches_oracle(gptq, 20 + m);
    }
  }
}

TEST_F(QuantLinear, RejectsBadViewBeforeChoosingAKernel) {
  DeviceBuffer<float> buf(64);
  QuantizedWeightView w;
  w.rows = 2;
  w.cols = 2;
  w.bits = 3;
  w.group_size = 2;
  EXPECT_THROW(launch_quant_linear(w, buf.get(), buf.get(), 1, nullptr), std::invalid_argument);
  EXPECT_THROW(launch_quant_linear(w, buf.get(), buf.get(), 40, nullptr), std::invalid_argument);
}

}  // namespace
}  // namespace nanoserve
