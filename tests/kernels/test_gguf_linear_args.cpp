// The argument checks of the GGUF launchers (kernels/gguf_linear.h): a bad view, null or
// misaligned buffers, an odd row count under kSwiGLU and a missing or short scratch are
// std::invalid_argument naming the launcher and the field, before anything is launched; empty
// launches launch nothing.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/device_buffer.h"
#include "kernels/gguf_linear.h"
#include "tests/kernels/gguf_test_support.h"
#include "tests/kernels/kernel_test_support.h"

namespace nanoserve {
namespace {

// Expects `run` to throw std::invalid_argument whose message contains `op` and `fragment`.
void expect_rejected(const std::function<void()>& run, const std::string& op,
                     const std::string& fragment) {
  try {
    run();
    ADD_FAILURE() << "expected std::invalid_argument mentioning '" << fragment << "'";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(op), std::string::npos) << what;
    EXPECT_NE(what.find(fragment), std::string::npos) << what;
  }
}

// A valid Q4_K problem (4 rows, 256 cols, batch 2) to break one field at a time.
struct ValidArgs {
  testing::GgufWeight w{GgufBlockType::kQ4_K, 4, 256, 11};
  DeviceBuffer<float> x{std::size_t(2) * 256};
  DeviceBuffer<float> y{std::size_t(2) * 4};
  GgufWeightView view() const { return w.view(); }
};

using GgufLinearArgs = testing::DeviceTest;

TEST_F(GgufLinearArgs, RejectsABadView) {
  ValidArgs a;
  const auto gemv = [&](const GgufWeightView& v) {
    return [&a, v] { launch_gguf_gemv<float>(v, a.x.get(), a.y.get(), 2, nullptr); };
  };
  GgufWeightView v = a.view();
  v.blocks = nullptr;
  expect_rejected(gemv(v), "launch_gguf_gemv", "blocks is null");
  v = a.view();
  v.cols = 128;
  expect_rejected(gemv(v), "launch_gguf_gemv",
                  "cols = 128 is not a multiple of Q4_K's 256-element blocks");
  v = a.view();
  v.type = GgufBlockType::kQ8_0;
  v.cols = 48;
  expect_rejected(gemv(v), "launch_gguf_gemv", "cols = 48 is not a multiple of Q8_0's");
  v = a.view();
  v.rows = -1;
  expect_rejected(gemv(v), "launch_gguf_gemv", "rows = -1");
  v = a.view();
  v.cols = -256;
  expect_rejected(gemv(v), "launch_gguf_gemv", "cols = -256");
  v = a.view();
  v.type = static_cast<GgufBlockType>(7);
  expect_rejected(gemv(v), "launch_gguf_gemv", "type = 7");
  v = a.view();
  v.blocks += 2;  // Q4_K blocks need 16-byte loads
  expect_rejected(gemv(v), "launch_gguf_gemv", "blocks is not 16-byte aligned");
  v.type = GgufBlockType::kQ8_0;  // 2-byte aligned is enough for Q8_0 and Q4_0 ...
  v.cols = 32;
  EXPECT_NO_THROW(launch_gguf_gemv<float>(v, a.x.get(), a.y.get(), 1, nullptr));
  v.blocks += 1;  // ... an odd address is not
  expect_rejected(gemv(v), "launch_gguf_gemv", "blocks is not 2-byte aligned");
}

TEST_F(GgufLinearArgs, RejectsABadQ6_KView) {
  const testing::GgufWeight w(GgufBlockType::kQ6_K, 2, 256, 14);
  DeviceBuffer<float> x(256), y(2), out(2 * 256);
  GgufWeightView v = w.view();
  v.cols = 128;
  expect_rejected([&] { launch_gguf_gemv<float>(v, x.get(), y.get(), 1, nullptr); },
                  "launch_gguf_gemv", "cols = 128 is not a multiple of Q6_K's 256-element blocks");
  expect_rejected([&] { launch_gguf_dequantize<float>(v, out.get(), nullptr); },
                  "launch_gguf_dequantize", "cols = 128 is not a multiple of Q6_K's");
  v = w.view();
  v.blocks += 1;  // 210-byte blocks are read with 2-byte loads: an odd address is refused
  expect_rejected([&] { launch_gguf_gemv<float>(v, x.get(), y.get(), 1, nullptr); },
                  "launch_gguf_gemv", "blocks is not 2-byte aligned (Q6_K)");
}

TEST_F(GgufLinearArgs, RejectsNullOrMisalignedActivations) {
  ValidArgs a;
  expect_rejected([&] { launch_gguf_gemv<float>(a.view(), nullptr, a.y.get(), 2, nullptr); },
                  "launch_gguf_gemv", "x is null");
  expect_rejected([&] { launch_gguf_gemv<float>(a.view(), a.x.get(), nullptr, 2, nullptr); },
                  "launch_gguf_gemv", "y is null");
  const float* x_odd = reinterpret_cast<const float*>(reinterpret_cast<const char*>(a.x.get()) + 2);
  expect_rejected([&] { launch_gguf_gemv<float>(a.view(), x_odd, a.y.get(), 2, nullptr); },
                  "launch_gguf_gemv", "x is not 4-byte aligned");
  float* y_odd = reinterpret_cast<float*>(reinterpret_cast<char*>(a.y.get()) + 1);
  expect_rejected([&] { launch_gguf_gemv<float>(a.view(), a.x.get(), y_odd, 2, nullptr); },
                  "launch_gguf_gemv", "y is not 4-byte aligned");
  expect_rejected([&] { launch_gguf_gemv<float>(a.view(), a.x.get(), a.y.get(), -1, nullptr); },
                  "launch_gguf_gemv", "batch = -1");
}

TEST_F(GgufLinearArgs, RejectsAnOddRowCountUnderSwiglu) {
  const testing::GgufWeight w(GgufBlockType::kQ8_0, 3, 32, 12);
  DeviceBuffer<float> x(32), y(3);
  expect_rejected(
      [&] { launch_gguf_gemv<float>(w.view(), x.get(), y.get(), 1, nullptr, Epilogue::kSwiGLU); },
      "launch_gguf_gemv", "even number of rows, got 3");
  DeviceBuffer<float> scratch(3 * 32);
  expect_rejected(
      [&] {
        launch_gguf_linear<float>(w.view(), x.get(), y.get(), 1, scratch.get(), scratch.size(),
                                  nullptr, Epilogue::kSwiGLU);
      },
      "launch_gguf_linear", "even number of rows, got 3");
}

TEST_F(GgufLinearArgs, LinearNeedsAScratchOfRowsTimesColsOnlyBeyondTheGemv) {
  const testing::GgufWeight w(GgufBlockType::kQ4_0, 4, 64, 13);
  const int many = kGgufLinearGemvMaxRows + 1;
  DeviceBuffer<float> x(std::size_t(many) * 64), y(std::size_t(many) * 4);
  expect_rejected(
      [&] { launch_gguf_linear<float>(w.view(), x.get(), y.get(), many, nullptr, 0, nullptr); },
      "launch_gguf_linear", "scratch is null");
  DeviceBuffer<float> short_scratch(4 * 64 - 1);
  expect_rejected(
      [&] {
        launch_gguf_linear<float>(w.view(), x.get(), y.get(), many, short_scratch.get(),
                                  short_scratch.size(), nullptr);
      },
      "launch_gguf_linear", "scratch_elements = 255 < rows x cols = 256");
  // Decode-sized batches never touch the scratch: a decode-only caller may pass none.
  EXPECT_NO_THROW(launch_gguf_linear<float>(w.view(), x.get(), y.get(),
                                            kGgufLinearGemvMaxRows, nullptr, 0, nullptr));
}

TEST_F(GgufLinearArgs, DequantizeRejectsABadViewOrANullOutput) {
  ValidArgs a;
  DeviceBuffer<float> out(4 * 256);
  expect_rejected([&] { launch_gguf_dequantize<float>(a.view(), nullptr, nullptr); },
                  "launch_gguf_dequantize", "out is null");
  GgufWeightView v = a.view();
  v.blocks = nullptr;
  expect_rejected([&] { launch_gguf_dequantize<float>(v, out.get(), nullptr); },
                  "launch_gguf_dequantize", "blocks is null");
  v = a.view();
  v.cols = 100;
  expect_rejected([&] { launch_gguf_dequantize<float>(v, out.get(), nullptr); },
                  "launch_gguf_dequantize", "cols = 100");
  __half* half_odd = reinterpret_cast<__half*>(reinterpret_cast<char*>(out.get()) + 1);
  expect_rejected([&] { launch_gguf_dequantize<__half>(a.view(), half_odd, nullptr); },
                  "launch_gguf_dequantize", "out is not 2-byte aligned");
}

TEST_F(GgufLinearArgs, EmptyLaunchesLaunchNothingAndEmptyColumnsGiveZeros) {
  ValidArgs a;
  EXPECT_NO_THROW(launch_gguf_gemv<float>(a.view(), nullptr, nullptr, 0, nullptr));
  EXPECT_NO_THROW(launch_gguf_linear<float>(a.view(), nullptr, nullptr, 0, nullptr, 0, nullptr));
  GgufWeightView no_rows = a.view();
  no_rows.rows = 0;
  no_rows.blocks = nullptr;
  EXPECT_NO_THROW(launch_gguf_gemv<float>(no_rows, nullptr, nullptr, 3, nullptr));
  EXPECT_NO_THROW(launch_gguf_dequantize<float>(no_rows, nullptr, nullptr));
  GgufWeightView no_cols = a.view();
  no_cols.cols = 0;
  no_cols.blocks = nullptr;  // nothing is read
  DeviceBuffer<float> y(std::vector<float>{5.0f, 6.0f, 7.0f, 8.0f});
  launch_gguf_gemv<float>(no_cols, nullptr, y.get(), 1, nullptr, Epilogue::kAccumulate);
  EXPECT_EQ(y.to_host(), (std::vector<float>{5.0f, 6.0f, 7.0f, 8.0f}));
  launch_gguf_gemv<float>(no_cols, nullptr, y.get(), 1, nullptr);
  EXPECT_EQ(y.to_host(), std::vector<float>(4, 0.0f));
}

}  // namespace
}  // namespace nanoserve
