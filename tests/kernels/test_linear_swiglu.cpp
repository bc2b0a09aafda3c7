// Epilogue::kSwiGLU (swiglu v02: the gate fused into the gate+up projection, W = [W1; W3]):
// every linear kernel the engine runs — launch_linear's GEMV and GEMM sides (tensor cores for
// fp16/bf16), launch_quant_linear's — against the oracle's swiglu(X W1ᵀ, X W3ᵀ) on the same
// rounded values, at awkward sizes, in fp32/fp16/bf16; in fp32 bitwise equal to the unfused MLP
// (two linears and swiglu v01), which is why greedy tokens do not move; and the versions without
// the epilogue refuse it.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/oracle/ops.h"
#include "common/tolerances.h"
#include "kernels/device_buffer.h"
#include "kernels/gemm.h"
#include "kernels/gemm_tc.h"
#include "kernels/gemv.h"
#include "kernels/linear.h"
#include "kernels/qgemm.h"
#include "kernels/qgemv.h"
#include "kernels/qlinear.h"
#include "kernels/swiglu.h"
#include "tests/kernels/activation_dtype_test_support.h"
#include "tests/kernels/kernel_test_support.h"
#include "tests/kernels/linear_test_support.h"
#include "tests/kernels/quant_linear_test_support.h"

namespace nanoserve {
namespace {

using testing::rounded;

// Y (rows, h) = swiglu(X W[0, h)ᵀ, X W[h, 2h)ᵀ) by the oracle; w (2h, k), x (rows, k).
std::vector<float> swiglu_reference(const std::vector<float>& w, const std::vector<float>& x,
                                    int rows, int h, int k) {
  std::vector<float> both(std::size_t(rows) * 2 * h);  // (rows, 2h): gate | up per row
  oracle::matmul(x.data(), w.data(), rows, k, 2 * h, both.data());
  std::vector<float> y(std::size_t(rows) * h);
  for (int r = 0; r < rows; ++r) {
    const float* row = both.data() + std::size_t(r) * 2 * h;
    oracle::swiglu(row, row + h, h, y.data() + std::size_t(r) * h);
  }
  return y;
}

// A fused gate+up problem: W (2h, k) in T, X (rows, k) in A, Y (rows, h) in A followed by a
// guard zone; Y starts as NaN, so an output the kernel fails to write fails the comparison.
template <typename T, typename A>
struct SwigluProblem {
  SwigluProblem(int rows_, int h_, int k_, std::uint64_t seed) : rows(rows_), h(h_), k(k_) {
    w = rounded<T>(testing::random_uniform(std::size_t(2) * h * k, seed, 1.0f / std::sqrt(float(k))));
    x = rounded<A>(testing::random_uniform(std::size_t(rows) * k, seed + 1, 1.0f));
    dw = testing::upload_as<T>(w);
    dx = testing::upload_as<A>(x);
    std::vector<float> y0(std::size_t(rows) * h, std::numeric_limits<float>::quiet_NaN());
    y0.resize(y0.size() + kGuard, kGuardValue);
    dy = testing::upload_as<A>(y0);
  }
  // Y from the device; a failure if the guard zone was written.
  std::vector<float> result() const {
    std::vector<float> y = testing::download(dy);
    for (std::size_t i = std::size_t(rows) * h; i < y.size(); ++i) {
      if (y[i] != kGuardValue) {
        ADD_FAILURE() << "wrote past the end of Y at guard element " << i - std::size_t(rows) * h;
        break;
      }
    }
    y.resize(std::size_t(rows) * h);
    return y;
  }
  std::vector<float> reference() const { return swiglu_reference(w, x, rows, h, k); }

  static constexpr std::size_t kGuard = 37;
  static constexpr float kGuardValue = 7.0f;  // exact in every storage type
  int rows, h, k;
  std::vector<float> w, x;  // the rounded values, as fp32
  DeviceBuffer<T> dw;
  DeviceBuffer<A> dx, dy;
};

// One rounding to A of fp32 sums (the GEMM tolerances), or the fp32 reorder tolerance.
template <typename A>
Tolerance output_tolerance() {
  if constexpr (dtype_of<A>() == DType::kF32) {
    return tol::kFp32DotReorder;
  } else if constexpr (dtype_of<A>() == DType::kF16) {
    return tol::kGemmOutFp16;
  } else {
    return tol::kGemmOutBf16;
  }
}

template <typename T>
class LinearSwiglu : public testing::DeviceTest {};
TYPED_TEST_SUITE(LinearSwiglu, testing::StorageTypes, testing::StorageTypeNames);

// Weights and activations in the same type — the engine's default; fp16/bf16 rows beyond the
// GEMV run on the tensor cores. k = 136 takes the 16-byte GEMV path, k = 33 the element path
// (and misaligned tensor-core chunks); h = 1 and 37 leave partial tiles and warps.
TYPED_TEST(LinearSwiglu, MatchesTheOracleOnBothSidesOfTheGemvGemmSwitch) {
  using T = TypeParam;
  for (int rows : {1, 3, kLinearGemvMaxRows, kLinearGemvMaxRows + 1, 70}) {
    for (const auto& [h, k] : {std::pair{1, 33}, std::pair{37, 136}, std::pair{40, 33}}) {
      SwigluProblem<T, T> p(rows, h, k, 500 + rows * 7 + h);
      launch_linear<T, T, T>(p.dw.get(), p.dx.get(), p.dy.get(), rows, 2 * h, k, nullptr,
                             Epilogue::kSwiGLU);
      testing::expect_within(p.result(), p.reference(), output_tolerance<T>(),
                             "rows=" + std::to_string(rows) + " h=" + std::to_string(h) +
                                 " k=" + std::to_string(k));
    }
  }
}

// fp32 activations over 16-bit weights (RunnerOptions::activation_dtype = fp32): the CUDA-core
// GEMM's interleaved gate/up tile columns.
TYPED_TEST(LinearSwiglu, Fp32ActivationsOverAnyWeightTypeMatchTheOracle) {
  using T = TypeParam;
  for (int rows : {2, 19, 70}) {
    SwigluProblem<T, float> p(rows, 45, 40, 600 + rows);
    launch_linear<T, float, float>(p.dw.get(), p.dx.get(), p.dy.get(), rows, 90, 40, nullptr,
                                   Epilogue::kSwiGLU);
    testing::expect_within(p.result(), p.reference(), tol::kFp32DotReorder,
                           "rows=" + std::to_string(rows));
  }
}

// In fp32 the fused epilogue sums every gate and up row in the same order as the two separate
// linears and calls the same silu_mul as swiglu v01: the bits agree, so a greedy decode cannot
// change (the reference-story tests hold the engine to that).
TYPED_TEST(LinearSwiglu, Fp32ActivationsAreBitwiseTheUnfusedMlp) {
  using T = TypeParam;
  constexpr int kH = 37, kK = 136;
  for (int rows : {1, 5, kLinearGemvMaxRows, kLinearGemvMaxRows + 1, 70}) {
    SwigluProblem<T, float> p(rows, kH, kK, 700 + rows);
    launch_linear<T, float, float>(p.dw.get(), p.dx.get(), p.dy.get(), rows, 2 * kH, kK,
                                   nullptr, Epilogue::kSwiGLU);
    DeviceBuffer<float> gate(std::size_t(rows) * kH), up(std::size_t(rows) * kH);
    launch_linear<T, float, float>(p.dw.get(), p.dx.get(), gate.get(), rows, kH, kK, nullptr);
    launch_linear<T, float, float>(p.dw.get() + std::size_t(kH) * kK, p.dx.get(), up.get(), rows,
                                   kH, kK, nullptr);
    launch_swiglu<float>(gate.get(), up.get(), std::int64_t(rows) * kH, gate.get(), nullptr);
    EXPECT_EQ(p.result(), gate.to_host()) << "rows=" << rows;
  }
}

using LinearSwigluVersions = testing::DeviceTest;

// The numbered versions that have the epilogue, each on its own (the launchers above pick one).
TEST_F(LinearSwigluVersions, EveryVersionWithTheEpilogueMatchesTheOracle) {
  for (int rows : {1, 6, 21}) {
    SwigluProblem<float, float> p(rows, 29, 72, 800 + rows);
    const std::string at = " rows=" + std::to_string(rows);
    launch_gemv_version<float>(3, p.dw.get(), p.dx.get(), p.dy.get(), rows, 58, 72, nullptr,
                               Epilogue::kSwiGLU);
    testing::expect_within(p.result(), p.reference(), tol::kFp32DotReorder, "gemv v03" + at);
    SwigluProblem<float, float> g(rows, 29, 72, 800 + rows);
    launch_gemm_version<float>(3, g.dw.get(), g.dx.get(), g.dy.get(), rows, 58, 72, nullptr,
                               Epilogue::kSwiGLU);
    testing::expect_within(g.result(), g.reference(), tol::kFp32DotReorder, "gemm v03" + at);
  }
}

template <typename T>
class WmmaLinearSwiglu : public testing::DeviceTest {};
using HalfTypes = ::testing::Types<__half, __nv_bfloat16>;
TYPED_TEST_SUITE(WmmaLinearSwiglu, HalfTypes, testing::StorageTypeNames);

// Tensor-core v02 and v03: a block stages the 32 gate and 32 up rows of its outputs; h = 45
// leaves a partial block of outputs, 70 rows a partial row tile, k = 40 a partial k tile.
TYPED_TEST(WmmaLinearSwiglu, TiledVersionsMatchTheOracleAndV01RefusesTheEpilogue) {
  using T = TypeParam;
  for (int version : {2, 3}) {
    for (int rows : {17, 70}) {
      SwigluProblem<T, T> p(rows, 45, 40, 900 + rows * 3 + version);
      launch_gemm_tc<T, T>(p.dw.get(), p.dx.get(), p.dy.get(), rows, 90, 40, nullptr,
                           Epilogue::kSwiGLU, version);
      testing::expect_within(p.result(), p.reference(), output_tolerance<T>(),
                             "v0" + std::to_string(version) + " rows=" + std::to_string(rows));
    }
  }
  SwigluProblem<T, T> p(32, 16, 32, 950);
  const auto v01 = [&] {
    launch_gemm_tc<T, T>(p.dw.get(), p.dx.get(), p.dy.get(), 32, 32, 32, nullptr,
                         Epilogue::kSwiGLU, 1);
  };
  EXPECT_THROW(v01(), std::invalid_argument);
}

TEST(LinearSwigluArgs, VersionsWithoutTheEpilogueAndOddWeightsAreRefused) {
  DeviceBuffer<float> w(64), x(64), y(64);
  for (int version : {1, 2}) {
    EXPECT_THROW(launch_gemv_version<float>(version, w.get(), x.get(), y.get(), 1, 4, 4, nullptr,
                                            Epilogue::kSwiGLU),
                 std::invalid_argument);
    EXPECT_THROW(launch_gemm_version<float>(version, w.get(), x.get(), y.get(), 1, 4, 4, nullptr,
                                            Epilogue::kSwiGLU),
                 std::invalid_argument);
  }
  // W = [gate; up] has an even number of rows.
  EXPECT_THROW(launch_linear<float>(w.get(), x.get(), y.get(), 1, 5, 4, nullptr,
                                    Epilogue::kSwiGLU),
               std::invalid_argument);
  EXPECT_THROW(launch_linear<float>(w.get(), x.get(), y.get(), 20, 5, 4, nullptr,
                                    Epilogue::kSwiGLU),
               std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------
// Quantized W = [W1; W3] (W4A16 / W8A16): the quantized GEMV's chunk and element paths, the
// CUDA-core and tensor-core quantized GEMMs.

using testing::QuantCase;
using testing::QuantLinearProblem;

// Runs `launch(view, x, y)` on the problem's codes with X in A; checks Y (batch, rows / 2).
// `w_in_a`: the kernel multiplies W's dequantized values rounded to A (the tensor-core GEMM).
template <typename A, typename Launch>
void expect_quant_swiglu(const QuantLinearProblem& p, const std::string& what, Launch launch,
                         bool w_in_a = false) {
  const int batch = p.spec.batch, h = p.spec.rows / 2, k = p.spec.cols;
  const std::vector<float> x = rounded<A>(p.x);
  DeviceBuffer<A> dx = testing::upload_as<A>(x);
  std::vector<float> y0(std::size_t(batch) * h + 11, std::numeric_limits<float>::quiet_NaN());
  DeviceBuffer<A> dy = testing::upload_as<A>(y0);
  launch(p.view(), dx.get(), dy.get());
  std::vector<float> got = testing::download(dy);
  for (std::size_t i = std::size_t(batch) * h; i < got.size(); ++i) {
    EXPECT_TRUE(got[i] != got[i]) << what << ": wrote past Y at " << i;  // still NaN
  }
  got.resize(std::size_t(batch) * h);
  const std::vector<float> w = w_in_a ? rounded<A>(p.w_dequantized) : p.w_dequantized;
  testing::expect_within(got, swiglu_reference(w, x, batch, h, k), output_tolerance<A>(),
                         what + " " + p.spec.label());
}

using QuantLinearSwiglu = testing::DeviceTest;

TEST_F(QuantLinearSwiglu, EveryVersionWithTheEpilogueMatchesTheOracle) {
  QuantCase chunked;  // INT4 g32 symmetric, cols a multiple of 32: the chunk path (v03–v06)
  chunked.rows = 2 * 21;
  chunked.cols = 128;
  chunked.scheme = quant::QuantScheme{4, 32, true};
  QuantCase general;  // INT8 asymmetric act-order, odd width: the element path
  general.rows = 2 * 9;
  general.cols = 172;
  general.scheme = quant::QuantScheme{8, 32, false};
  general.act_order = true;
  for (QuantCase c : {chunked, general}) {
    for (int batch : {1, 3, 16}) {
      c.batch = batch;
      const QuantLinearProblem p(c, 40 + batch);
      for (int version = 3; version <= kQGemvVersions; ++version) {
        expect_quant_swiglu<float>(p, "qgemv v0" + std::to_string(version),
                                   [&](const QuantizedWeightView& w, float* x, float* y) {
                                     launch_qgemv_version<float>(version, w, x, y, batch,
                                                                 nullptr, Epilogue::kSwiGLU);
                                   });
      }
    }
    c.batch = 37;
    const QuantLinearProblem p(c, 77);
    expect_quant_swiglu<float>(p, "qgemm v03", [&](const QuantizedWeightView& w, float* x,
                                                   float* y) {
      launch_qgemm_version<float>(3, w, x, y, 37, nullptr, Epilogue::kSwiGLU);
    });
  }
}

TEST_F(QuantLinearSwiglu, HalfActivationsOnBothSidesOfTheSwitch) {
  QuantCase c;
  c.rows = 2 * 33;
  c.cols = 256;
  c.scheme = quant::QuantScheme{4, 128, false};
  for (int batch : {2, kQuantLinearGemvMaxRows + 1}) {
    c.batch = batch;
    const QuantLinearProblem p(c, 90 + batch);
    // Beyond the GEMV rows the tensor cores multiply W's dequantized tiles rounded to A.
    const bool tensor_cores = batch > kQuantLinearGemvMaxRows;
    expect_quant_swiglu<__half>(
        p, "fp16",
        [&](const QuantizedWeightView& w, __half* x, __half* y) {
          launch_quant_linear<__half, __half>(w, x, y, batch, nullptr, Epilogue::kSwiGLU);
        },
        tensor_cores);
    expect_quant_swiglu<__nv_bfloat16>(
        p, "bf16",
        [&](const QuantizedWeightView& w, __nv_bfloat16* x, __nv_bfloat16* y) {
          launch_quant_linear<__nv_bfloat16, __nv_bfloat16>(w, x, y, batch, nullptr,
                                                            Epilogue::kSwiGLU);
        },
        tensor_cores);
  }
}

TEST_F(QuantLinearSwiglu, VersionsWithoutTheEpilogueAreRefused) {
  QuantCase c;
  c.rows = 4;
  c.cols = 32;
  c.scheme = quant::QuantScheme{4, 32, true};
  const QuantLinearProblem p(c, 5);
  for (int version : {1, 2}) {
    EXPECT_THROW(launch_qgemv_version<float>(version, p.view(), p.dx.get(), p.dy.get(), 1,
                                             nullptr, Epilogue::kSwiGLU),
                 std::invalid_argument);
    EXPECT_THROW(launch_qgemm_version<float>(version, p.view(), p.dx.get(), p.dy.get(), 1,
                                             nullptr, Epilogue::kSwiGLU),
                 std::invalid_argument);
  }
}

}  // namespace
}  // namespace nanoserve
