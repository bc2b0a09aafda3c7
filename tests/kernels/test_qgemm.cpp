// Quantized GEMM (W8A16 / W4A16 prefill): every version × bits × symmetric/asymmetric against
// oracle::matmul on the dequantized weights, over group sizes 32/64/128/per-channel/48, odd
// widths, act-order and M up to 67 (partial 16- and 64-row tiles); a hand-computed exact
// product; the accumulate epilogue; and the argument checks.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "common/allclose.h"
#include "common/tolerances.h"
#include "kernels/qgemm.h"
#include "tests/kernels/kernel_test_support.h"
#include "tests/kernels/quant_linear_test_support.h"

namespace nanoserve {
namespace {

using testing::QuantCase;
using testing::QuantLinearProblem;

// Each test runs one version (the parameter) over both code widths and both zero-point kinds.
class QuantGemm : public testing::DeviceTest, public ::testing::WithParamInterface<int> {
 protected:
  int version() const { return GetParam(); }
  void expect_matches_oracle(const QuantCase& c, std::uint64_t seed) {
    QuantLinearProblem p(c, seed);
    launch_qgemm_version(version(), p.view(), p.dx.get(), p.dy.get(), c.batch, nullptr,
                         c.epilogue);
    const CloseResult r = allclose(p.result(), p.reference(), tol::kFp32DotReorder);
    EXPECT_TRUE(r.ok) << "v0" << version() << " " << c.label() << ": " << r.summary();
  }
};

TEST_P(QuantGemm, MatchesOracleOverGroupSizesShapesAndActOrder) {
  // (m, rows, cols): m 1, 17, 67 (one row; partial 16-row tiles of v02; a second 64-row tile
  // of v03 with 3 rows), rows 3, 17, 129 and cols 32, 100, 172, 1000 (partial 16- and 64-wide
  // tiles, odd nibble counts, narrow last groups).
  const std::vector<std::tuple<int, int, int>> shapes = {
      {1, 17, 172}, {17, 3, 100}, {67, 129, 32}, {5, 20, 1000}};
  int n = 0;
  for (bool act_order : {false, true}) {
    for (int group_size : {32, 64, 128, 0, 48}) {
      for (int bits : {4, 8}) {
        for (bool symmetric : {true, false}) {
          // One shape per case, rotating so that every (bits, symmetric) pair meets every shape
          // and every group size meets every shape.
          const std::size_t i = static_cast<std::size_t>(n);
          const auto& [m, rows, cols] = shapes[(i + i / shapes.size()) % shapes.size()];
          QuantCase c;
          c.batch = m;
          c.rows = rows;
          c.cols = cols;
          c.scheme = quant::QuantScheme{bits, group_size, symmetric};
          c.act_order = act_order;
          expect_matches_oracle(c, 1000 * version() + n++);
        }
      }
    }
  }
}

TEST_P(QuantGemm, AccumulatesIntoY) {
  for (int bits : {4, 8}) {
    QuantCase c;
    c.batch = 33;
    c.rows = 70;
    c.cols = 96;
    c.scheme = quant::QuantScheme{bits, 64, bits == 4};
    c.epilogue = Epilogue::kAccumulate;
    expect_matches_oracle(c, 77 + bits);
  }
}

std::string version_name(const ::testing::TestParamInfo<int>& info) {
  return "v0" + std::to_string(info.param);
}

INSTANTIATE_TEST_SUITE_P(Versions, QuantGemm, ::testing::Range(1, kQGemmVersions + 1),
                         version_name);

using QuantGemmExact = testing::DeviceTest;

TEST_F(QuantGemmExact, Int4HandComputedProduct) {
  // W (2, 3) INT4 symmetric per channel (z = 8): row 0 codes [1, 2, 15] (bytes 0x21, 0x0F),
  // scale 0.5 -> [-3.5, -3, 3.5]; row 1 codes [8, 0, 9] (bytes 0x08, 0x09), scale 0.25 ->
  // [0, -2, 0.25]. X = [[1, 2, -1], [2, 0, 4]]:
  //   Y = [[-3.5 - 6 - 3.5, 0 - 4 - 0.25], [-7 + 0 + 14, 0 + 0 + 1]] = [[-13, -4.25], [7, 1]].
  DeviceBuffer<std::uint8_t> codes(std::vector<std::uint8_t>{0x21, 0x0F, 0x08, 0x09});
  DeviceBuffer<std::uint16_t> scales(std::vector<std::uint16_t>{0x3800, 0x3400});  // 0.5, 0.25
  QuantizedWeightView w;
  w.qweight = codes.get();
  w.scales = reinterpret_cast<const __half*>(scales.get());
  w.rows = 2;
  w.cols = 3;
  w.bits = 4;
  w.group_size = 3;
  const DeviceBuffer<float> x(std::vector<float>{1.0f, 2.0f, -1.0f, 2.0f, 0.0f, 4.0f});
  for (int version = 1; version <= kQGemmVersions; ++version) {
    DeviceBuffer<float> y(4);
    launch_qgemm_version(version, w, x.get(), y.get(), 2, nullptr);
    EXPECT_EQ(y.to_host(), (std::vector<float>{-13.0f, -4.25f, 7.0f, 1.0f})) << "v0" << version;
  }
}

using QuantGemmArgs = testing::DeviceTest;

TEST_F(QuantGemmArgs, RejectsBadViewsAndVersions) {
  DeviceBuffer<std::uint8_t> codes(std::vector<std::uint8_t>(64, 0x88));
  DeviceBuffer<std::uint16_t> scales(std::vector<std::uint16_t>(4, 0x3800));
  DeviceBuffer<float> x(std::vector<float>(64, 1.0f));
  DeviceBuffer<float> y(8);
  QuantizedWeightView good;
  good.qweight = codes.get();
  good.scales = reinterpret_cast<const __half*>(scales.get());
  good.rows = 4;
  good.cols = 32;
  good.bits = 4;
  good.group_size = 32;
  QuantizedWeightView bits3 = good;
  bits3.bits = 3;
  QuantizedWeightView group0 = good;
  group0.group_size = 0;
  QuantizedWeightView odd_zeros = good;
  odd_zeros.zeros =
      reinterpret_cast<const __half*>(reinterpret_cast<const char*>(scales.get()) + 1);
  for (int version = 1; version <= kQGemmVersions; ++version) {
    EXPECT_THROW(launch_qgemm_version(version, bits3, x.get(), y.get(), 2, nullptr),
                 std::invalid_argument);
    EXPECT_THROW(launch_qgemm_version(version, group0, x.get(), y.get(), 2, nullptr),
                 std::invalid_argument);
    EXPECT_THROW(launch_qgemm_version(version, odd_zeros, x.get(), y.get(), 2, nullptr),
                 std::invalid_argument);
    EXPECT_THROW(launch_qgemm_version(version, good, x.get(), y.get(), -1, nullptr),
                 std::invalid_argument);
    EXPECT_NO_THROW(launch_qgemm_version(version, good, x.get(), y.get(), 0, nullptr));
    launch_qgemm_version(version, good, x.get(), y.get(), 2, nullptr);
    EXPECT_EQ(y.to_host(), std::vector<float>(8, 0.0f)) << "v0" << version;  // codes 8 = z
  }
  for (int version : {0, kQGemmVersions + 1}) {
    EXPECT_THROW(launch_qgemm_version(version, good, x.get(), y.get(), 2, nullptr),
                 std::invalid_argument);
  }
}

}  // namespace
}  // namespace nanoserve
