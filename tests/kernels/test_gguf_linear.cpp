// GGUF weights kept packed on the device (kernels/gguf_linear.h): the dequantize kernel gives
// bitwise the fp32 values of the loaders' decoders (ggml's dequantize_row_*), rounded once to
// fp16/bf16; the GEMV and launch_gguf_linear (GEMV up to kGgufLinearGemvMaxRows rows, dequantize +
// launch_linear beyond) match oracle::matmul on those decoded weights for every block type, every
// (activation, output) pair and every epilogue, at awkward sizes (rows 1, 3, 17, 64; cols 32, 96,
// 256, 512 — Q4_K and Q6_K only whole 256-element super-blocks) and batches 0, 1, 3, 8, 9, 17 (9
// and 17: a second GEMV pass, or the GEMM path). Blocks are random (any bytes are a valid block):
// tests/kernels/gguf_test_support.h. Argument checks: test_gguf_linear_args.cpp.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "common/oracle/ops.h"
#include "common/tolerances.h"
#include "kernels/device_buffer.h"
#include "kernels/gguf_linear.h"
#include "tests/kernels/activation_dtype_test_support.h"
#include "tests/kernels/gguf_test_support.h"
#include "tests/kernels/kernel_test_support.h"
#include "tests/kernels/linear_test_support.h"

namespace nanoserve {
namespace {

using testing::GgufWeight;

// (rows, cols) of the sweeps; Q4_K and Q6_K take only the widths that are whole super-blocks.
std::vector<std::pair<int, int>> shapes_for(GgufBlockType type) {
  std::vector<std::pair<int, int>> out;
  for (int cols : {32, 96, 256, 512}) {
    if (cols % gguf_block_elements(type) != 0) continue;
    for (int rows : {1, 3, 17, 64}) out.emplace_back(rows, cols);
  }
  return out;
}

// The storage bits of a value (bitwise comparisons: -0 and 0 differ, NaNs compare).
template <typename T>
std::uint32_t bits_of(T v) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  return bits;
}

// ---------------------------------------------------------------------------------------------
// Dequantize: bitwise the host decoders' values.

template <typename T>
class GgufDequantize : public testing::DeviceTest {};
TYPED_TEST_SUITE(GgufDequantize, testing::StorageTypes, testing::StorageTypeNames);

TYPED_TEST(GgufDequantize, IsTheHostDecoderRoundedOnceBitForBit) {
  using T = TypeParam;
  int n = 0;
  for (GgufBlockType type : testing::gguf_block_types()) {
    for (const auto& [rows, cols] : shapes_for(type)) {
      const GgufWeight w(type, rows, cols, 100 + n++);
      constexpr std::size_t kGuard = 29;
      const std::size_t size = std::size_t(rows) * std::size_t(cols);
      const T guard = from_float<T>(-3.0f);
      DeviceBuffer<T> out(std::vector<T>(size + kGuard, guard));
      launch_gguf_dequantize<T>(w.view(), out.get(), nullptr);
      const std::vector<T> got = out.to_host();
      std::size_t mismatches = 0, first = size;
      for (std::size_t i = 0; i < size; ++i) {
        if (bits_of(got[i]) != bits_of(from_float<T>(w.decoded[i]))) {
          if (mismatches++ == 0) first = i;
        }
      }
      const std::string at = testing::gguf_name(type) + " " + std::to_string(rows) + "x" +
                             std::to_string(cols);
      EXPECT_EQ(mismatches, 0u) << at << ": first at " << first << " (row " << first / cols
                                << ", col " << first % cols << "): got "
                                << (first < size ? to_float(got[first]) : 0.0f) << ", want "
                                << (first < size ? w.decoded[first] : 0.0f);
      for (std::size_t i = size; i < got.size(); ++i) {
        ASSERT_EQ(bits_of(got[i]), bits_of(guard)) << at << ": wrote past the end";
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// GEMV and launch_gguf_linear against the oracle.

// One rounding of fp32 sums to O (the GEMM tolerances), or the fp32 reorder tolerance.
template <typename O>
Tolerance output_tolerance() {
  if constexpr (dtype_of<O>() == DType::kF32) {
    return tol::kFp32DotReorder;
  } else if constexpr (dtype_of<O>() == DType::kF16) {
    return tol::kGemmOutFp16;
  } else {
    return tol::kGemmOutBf16;
  }
}

// Y (batch, out) by the oracle from the weights `w` (rows_w, cols) as the kernel multiplies
// them, x (batch, cols) and the initial Y `y0`.
std::vector<float> reference(const std::vector<float>& w, const std::vector<float>& x,
                             const std::vector<float>& y0, int batch, int rows_w, int cols,
                             Epilogue epilogue) {
  std::vector<float> xw(std::size_t(batch) * std::size_t(rows_w));
  oracle::matmul(x.data(), w.data(), batch, cols, rows_w, xw.data());
  if (epilogue == Epilogue::kStore) return xw;
  if (epilogue == Epilogue::kAccumulate) {
    for (std::size_t i = 0; i < xw.size(); ++i) xw[i] += y0[i];
    return xw;
  }
  const int h = rows_w / 2;
  std::vector<float> y(std::size_t(batch) * std::size_t(h));
  for (int b = 0; b < batch; ++b) {
    const float* row = xw.data() + std::size_t(b) * std::size_t(rows_w);
    oracle::swiglu(row, row + h, h, y.data() + std::size_t(b) * std::size_t(h));
  }
  return y;
}

template <typename P>
class GgufLinear : public testing::DeviceTest {
 protected:
  using A = typename P::Act;  // activations
  using O = typename P::Out;  // outputs

  // Runs launch_gguf_linear (`via_linear`) or launch_gguf_gemv on a random problem with `out`
  // output features and compares with the oracle.
  void expect_matches_oracle(GgufBlockType type, int out, int cols, int batch, Epilogue epilogue,
                             bool via_linear, std::uint64_t seed) {
    const int rows_w = epilogue == Epilogue::kSwiGLU ? 2 * out : out;
    const GgufWeight w(type, rows_w, cols, seed);
    const std::vector<float> x =
        testing::rounded<A>(testing::random_uniform(std::size_t(batch) * cols, seed + 1, 1.0f));
    const std::size_t y_size = std::size_t(batch) * std::size_t(out);
    const std::vector<float> y0 =
        epilogue == Epilogue::kAccumulate
            ? testing::rounded<O>(testing::random_uniform(y_size, seed + 2, 1.0f))
            : std::vector<float>(y_size, std::numeric_limits<float>::quiet_NaN());
    constexpr std::size_t kGuard = 37;
    constexpr float kGuardValue = 7.0f;  // exact in every type
    std::vector<float> y_with_guard = y0;
    y_with_guard.resize(y_size + kGuard, kGuardValue);
    DeviceBuffer<A> dx = testing::upload_as<A>(x);
    DeviceBuffer<O> dy = testing::upload_as<O>(y_with_guard);
    // Beyond the GEMV rows launch_gguf_linear multiplies W rounded to A (the scratch matrix).
    const bool gemm = via_linear && batch > kGgufLinearGemvMaxRows;
    const std::vector<float> w_used = gemm ? testing::rounded<A>(w.decoded) : w.decoded;
    if (via_linear) {
      DeviceBuffer<A> scratch(std::size_t(rows_w) * std::size_t(cols));
      launch_gguf_linear<A, O>(w.view(), dx.get(), dy.get(), batch, scratch.get(),
                               scratch.size(), nullptr, epilogue);
    } else {
      launch_gguf_gemv<A, O>(w.view(), dx.get(), dy.get(), batch, nullptr, epilogue);
    }
    std::vector<float> got = testing::download(dy);
    const std::string at = std::string(via_linear ? "launch_gguf_linear " : "launch_gguf_gemv ") +
                           testing::gguf_name(type) + " out=" + std::to_string(out) +
                           " cols=" + std::to_string(cols) + " batch=" + std::to_string(batch) +
                           " epilogue=" + std::to_string(static_cast<int>(epilogue));
    for (std::size_t i = y_size; i < got.size(); ++i) {
      ASSERT_EQ(got[i], kGuardValue) << at << ": wrote past the end of Y";
    }
    got.resize(y_size);
    testing::expect_within(got, reference(w_used, x, y0, batch, rows_w, cols, epilogue),
                           output_tolerance<O>(), at);
  }
  // x one element past a 16-byte boundary: pieces of x are read element by element.
  void expect_unaligned_x_matches(GgufBlockType type) {
    const int cols = gguf_block_elements(type);
    const GgufWeight w(type, 5, cols, 321);
    const std::vector<float> x = testing::rounded<A>(testing::random_uniform(cols + 1, 322, 1.0f));
    DeviceBuffer<A> dx = testing::upload_as<A>(x);
    DeviceBuffer<O> dy(5);
    launch_gguf_gemv<A, O>(w.view(), dx.get() + 1, dy.get(), 1, nullptr);
    const std::vector<float> x1(x.begin() + 1, x.end());
    testing::expect_within(testing::download(dy),
                           reference(w.decoded, x1, {}, 1, 5, cols, Epilogue::kStore),
                           output_tolerance<O>(), testing::gguf_name(type) + " unaligned x");
  }
};
TYPED_TEST_SUITE(GgufLinear, testing::GgufActOutTypes, testing::ActOutNames);

TYPED_TEST(GgufLinear, MatchesTheOracleForEveryTypeEpilogueAndBatch) {
  int n = 0;
  for (GgufBlockType type : testing::gguf_block_types()) {
    const std::vector<std::pair<int, int>> shapes = shapes_for(type);
    for (Epilogue e : {Epilogue::kStore, Epilogue::kAccumulate, Epilogue::kSwiGLU}) {
      for (int batch : {0, 1, 3, kGgufGemvMaxBatch, kGgufGemvMaxBatch + 1, kGgufLinearGemvMaxRows,
                        kGgufLinearGemvMaxRows + 1}) {
        for (bool via_linear : {false, true}) {
          // Shapes cycle with the case number: every shape meets several batches and epilogues.
          const auto& [rows, cols] = shapes[std::size_t(n * 5) % shapes.size()];
          this->expect_matches_oracle(type, rows, cols, batch, e, via_linear, 7000 + 10 * n);
          ++n;
        }
      }
    }
  }
}

TYPED_TEST(GgufLinear, EveryShapeMatchesTheOracle) {
  // The full shape grid once per type, at a batch that uses the 8-wide GEMV tier.
  int n = 0;
  for (GgufBlockType type : testing::gguf_block_types()) {
    for (const auto& [rows, cols] : shapes_for(type)) {
      this->expect_matches_oracle(type, rows, cols, 3, Epilogue::kStore, false, 9000 + 10 * n++);
    }
  }
}

TYPED_TEST(GgufLinear, UnalignedActivationsTakeTheElementLoads) {
  for (GgufBlockType type : testing::gguf_block_types()) this->expect_unaligned_x_matches(type);
}

}  // namespace
}  // namespace nanoserve
