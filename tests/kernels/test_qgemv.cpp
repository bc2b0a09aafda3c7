// Quantized GEMV (W8A16 / W4A16 decode): every version × bits × symmetric/asymmetric against
// oracle::matmul on the dequantized weights (QuantizedLinear::dequantize), over group sizes
// 32/64/128/per-channel/48 (not a multiple of a chunk), shapes that take the chunk path and
// shapes that do not, act-order, batches 1..9 and beyond one pass; hand-computed products that
// pin the nibble order and the group lookup without any of the project's packing code; the
// store and accumulate epilogues; and the argument checks.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/allclose.h"
#include "common/tolerances.h"
#include "kernels/qgemv.h"
#include "kernels/qgemv_chunk.cuh"
#include "tests/kernels/kernel_test_support.h"
#include "tests/kernels/quant_linear_test_support.h"

namespace nanoserve {
namespace {

using testing::QuantCase;
using testing::QuantLinearProblem;

// Each test runs one version (the parameter) over both code widths and both zero-point kinds:
// one process per version keeps the ctest runs (sim forward, reverse, ASan) short.
class QuantGemv : public testing::DeviceTest, public ::testing::WithParamInterface<int> {
 protected:
  int version() const { return GetParam(); }
  // Runs this version on a fresh problem; returns whether it took the chunk path.
  bool expect_matches_oracle(const QuantCase& c, std::uint64_t seed) {
    QuantLinearProblem p(c, seed);
    launch_qgemv_version(version(), p.view(), p.dx.get(), p.dy.get(), c.batch, nullptr,
                         c.epilogue);
    const CloseResult r = allclose(p.result(), p.reference(), tol::kFp32DotReorder);
    EXPECT_TRUE(r.ok) << "v0" << version() << " " << c.label() << ": " << r.summary();
    return qgemv_detail::chunk_path_applies(p.view(), p.dx.get());
  }
};

// INT4 and INT8, symmetric and asymmetric, with the given group size (0 = per channel).
std::vector<quant::QuantScheme> schemes(int group_size) {
  std::vector<quant::QuantScheme> out;
  for (int bits : {4, 8}) {
    for (bool symmetric : {true, false}) {
      out.push_back(quant::QuantScheme{bits, group_size, symmetric});
    }
  }
  return out;
}

// Group sizes: 32, 64, 128, per channel (0), and 48 — not a multiple of a 16-byte chunk of codes,
// so always the general path.
const std::vector<int> kGroupSizes = {32, 64, 128, 0, 48};

TEST_P(QuantGemv, MatchesOracleOverGroupSizesAndShapes) {
  // (rows, cols). Chunk path for INT4 and INT8 (cols a multiple of 32): 32 (one chunk, groups
  // wider than the row), 96 (group 64 leaves a last group of 32), 1056 (33 chunks: partial warp
  // pass; group 128 leaves 32), 4160 (130 INT4 / 260 INT8 chunks: the unrolled main loop and its
  // tail). General path: cols 100, 172 (stories260K's hidden width, 5·32 + 12), 1000 — odd
  // nibble counts per group and rows that are not whole chunks. Rows 1, 3, 17, 129: partial
  // blocks of 8 (16 for v05, v06) rows and, for v05 and v06, an odd last row.
  const std::vector<std::pair<int, int>> shapes = {{1, 32},  {129, 96}, {17, 1056}, {3, 4160},
                                                   {1, 100}, {3, 172},  {17, 1000}, {129, 100}};
  int chunked = 0;
  int general = 0;
  int n = 0;
  for (int group_size : kGroupSizes) {
    for (const quant::QuantScheme& scheme : schemes(group_size)) {
      for (const auto& [rows, cols] : shapes) {
        QuantCase c;
        c.batch = 1 + n % 9;  // 1..9: every batch tier (1, 4, 16) of v03–v06
        c.rows = rows;
        c.cols = cols;
        c.scheme = scheme;
        (expect_matches_oracle(c, 1000 * version() + n) ? chunked : general) += 1;
        ++n;
      }
    }
  }
  // The sweep must exercise both paths of v03–v06 (a shape list edit could silently drop one).
  EXPECT_GT(chunked, 0);
  EXPECT_GT(general, 0);
}

TEST_P(QuantGemv, MatchesOracleWithActOrder) {
  // g_idx scatters each group over the row: the group of every column is looked up, including
  // on shapes that would otherwise take the chunk path (32, 1056).
  const std::vector<std::pair<int, int>> shapes = {{3, 32}, {17, 172}, {5, 1056}};
  int n = 0;
  for (int group_size : kGroupSizes) {
    for (const quant::QuantScheme& scheme : schemes(group_size)) {
      for (const auto& [rows, cols] : shapes) {
        QuantCase c;
        c.batch = 1 + (2 * n) % 9;
        c.rows = rows;
        c.cols = cols;
        c.scheme = scheme;
        c.act_order = true;
        EXPECT_FALSE(expect_matches_oracle(c, 500 + 1000 * version() + n));
        ++n;
      }
    }
  }
}

TEST_P(QuantGemv, AccumulatesIntoY) {
  // The fused residual add: y += W x, on the chunk path (96) and the general path (100).
  for (const quant::QuantScheme& scheme : schemes(32)) {
    for (int cols : {96, 100}) {
      QuantCase c;
      c.batch = 3;
      c.rows = 37;
      c.cols = cols;
      c.scheme = scheme;
      c.epilogue = Epilogue::kAccumulate;
      expect_matches_oracle(c, 900 + cols + scheme.bits);
    }
  }
}

TEST_P(QuantGemv, BatchLargerThanOnePassIsSplitIntoPasses) {
  // v03–v06 keep kQGemvMaxBatch (16) vectors in registers per pass over W; 17 and 35 need a
  // second and a third pass (v01 and v02 run any batch in one grid).
  for (int batch : {kQGemvMaxBatch, kQGemvMaxBatch + 1, 2 * kQGemvMaxBatch + 3}) {
    for (int cols : {64, 100}) {
      for (Epilogue e : {Epilogue::kStore, Epilogue::kAccumulate}) {
        QuantCase c;
        c.batch = batch;
        c.rows = 19;
        c.cols = cols;
        c.scheme = quant::QuantScheme{cols == 64 ? 4 : 8, 32, e == Epilogue::kStore};
        c.epilogue = e;
        expect_matches_oracle(c, 1000 + batch + cols);
      }
    }
  }
}

std::string version_name(const ::testing::TestParamInfo<int>& info) {
  return "v0" + std::to_string(info.param);
}

INSTANTIATE_TEST_SUITE_P(Versions, QuantGemv, ::testing::Range(1, kQGemvVersions + 1),
                         version_name);

// ---------------------------------------------------------------------------------------------
// Hand-computed products: bytes written here by hand, values checked exactly.

// A device weight from hand-made arrays (fp16 given as bit patterns).
testing::DeviceQuantWeight hand_weight(int rows, int cols, int bits, int group_size,
                                       const std::vector<std::uint8_t>& qweight,
                                       const std::vector<std::uint16_t>& scales,
                                       const std::vector<std::uint16_t>& zeros = {}) {
  testing::DeviceQuantWeight d;
  d.qweight = DeviceBuffer<std::uint8_t>(qweight);
  d.scales = DeviceBuffer<std::uint16_t>(scales);
  d.zeros = DeviceBuffer<std::uint16_t>(zeros);
  d.rows = rows;
  d.cols = cols;
  d.bits = bits;
  d.group_size = group_size;
  return d;
}

constexpr std::uint16_t kFp16Eighth = 0x3000;   // 0.125
constexpr std::uint16_t kFp16Quarter = 0x3400;  // 0.25
constexpr std::uint16_t kFp16Half = 0x3800;     // 0.5
constexpr std::uint16_t kFp16Three = 0x4200;    // 3.0
constexpr std::uint16_t kFp16Hundred = 0x5640;  // 100.0

using QuantGemvExact = testing::DeviceTest;

TEST_F(QuantGemvExact, Int4SymmetricOddWidthUsesLowNibbleForEvenColumns) {
  // W (2, 3) INT4, symmetric (z = 8), one group per row (per channel):
  //   row 0 codes [1, 2, 15] -> bytes 0x21, 0x0F; scale 0.5  -> W = [-3.5, -3, 3.5]
  //   row 1 codes [8, 0, 9]  -> bytes 0x08, 0x09; scale 0.25 -> W = [0, -2, 0.25]
  // x = [1, 2, -1]: y = [-3.5 - 6 - 3.5, 0 - 4 - 0.25] = [-13, -4.25] (all exact).
  // A swapped nibble order would read row 0 as [2, 1, 0]: y_0 = -12 - 7 + 8 ≠ -13.
  const auto w = hand_weight(2, 3, 4, 3, {0x21, 0x0F, 0x08, 0x09}, {kFp16Half, kFp16Quarter});
  const DeviceBuffer<float> x(std::vector<float>{1.0f, 2.0f, -1.0f});
  for (int version = 1; version <= kQGemvVersions; ++version) {
    DeviceBuffer<float> y(2);
    launch_qgemv_version(version, w.view(), x.get(), y.get(), 1, nullptr);
    EXPECT_EQ(y.to_host(), (std::vector<float>{-13.0f, -4.25f})) << "v0" << version;
  }
}

TEST_F(QuantGemvExact, Int4ChunkPathKeepsColumnOrderWithinWordsAndGroups) {
  // W (1, 64) INT4 asymmetric, groups of 32 (exactly one 16-byte chunk each), zero point 3,
  // scales 0.125 and 0.25; code of column c = c mod 16, so
  // byte k = (2k mod 16) | (2k+1 mod 16) << 4.
  // x_c = c. Group 0: sum_{c<32} (c mod 16 - 3) c = 4400 - 1488 = 2912, times 0.125 = 364.
  // Group 1: sum_{c=32..63} (c mod 16 - 3) c = 32·144 + 2912 = 7520, times 0.25 = 1880.
  // y = 2244 exactly (every partial sum is a multiple of 1/8 below 2^20).
  std::vector<std::uint8_t> bytes(32);
  for (int k = 0; k < 32; ++k) {
    bytes[static_cast<std::size_t>(k)] =
        static_cast<std::uint8_t>((2 * k) % 16 | ((2 * k + 1) % 16) << 4);
  }
  const auto w = hand_weight(1, 64, 4, 32, bytes, {kFp16Eighth, kFp16Quarter},
                             {kFp16Three, kFp16Three});
  std::vector<float> xs(64);
  for (int c = 0; c < 64; ++c) xs[static_cast<std::size_t>(c)] = static_cast<float>(c);
  const DeviceBuffer<float> x(xs);
  ASSERT_TRUE(qgemv_detail::chunk_path_applies(w.view(), x.get()));
  for (int version = 1; version <= kQGemvVersions; ++version) {
    DeviceBuffer<float> y(1);
    launch_qgemv_version(version, w.view(), x.get(), y.get(), 1, nullptr);
    EXPECT_EQ(y.to_host(), std::vector<float>{2244.0f}) << "v0" << version;
  }
}

TEST_F(QuantGemvExact, Int8ChunkPathProduct) {
  // W (1, 16) INT8 asymmetric, code of column c = 10c, zero point 100, scale 0.5, x_c = c:
  // y = 0.5 · sum_c (10c - 100) c = 0.5 · (10·1240 - 100·120) = 200.
  std::vector<std::uint8_t> bytes(16);
  std::vector<float> xs(16);
  for (int c = 0; c < 16; ++c) {
    bytes[static_cast<std::size_t>(c)] = static_cast<std::uint8_t>(10 * c);
    xs[static_cast<std::size_t>(c)] = static_cast<float>(c);
  }
  const auto w = hand_weight(1, 16, 8, 16, bytes, {kFp16Half}, {kFp16Hundred});
  const DeviceBuffer<float> x(xs);
  ASSERT_TRUE(qgemv_detail::chunk_path_applies(w.view(), x.get()));
  for (int version = 1; version <= kQGemvVersions; ++version) {
    DeviceBuffer<float> y(1);
    launch_qgemv_version(version, w.view(), x.get(), y.get(), 1, nullptr);
    EXPECT_EQ(y.to_host(), std::vector<float>{200.0f}) << "v0" << version;
  }
}

TEST_F(QuantGemvExact, ActOrderLooksUpEachColumnsGroup) {
  // W (1, 4) INT8 symmetric (z = 128), g_idx = [1, 0, 1, 0], scales [0.5, 0.25] for groups 0, 1;
  // codes [130, 132, 120, 128] -> W = [0.25·2, 0.5·4, 0.25·(-8), 0.5·0] = [0.5, 2, -2, 0].
  // x = [1, 1, 1, 1]: y = 0.5. (Groups by position instead, [0, 0, 1, 1]: 1 + 2 - 2 + 0 = 1.)
  auto w = hand_weight(1, 4, 8, 2, {130, 132, 120, 128}, {kFp16Half, kFp16Quarter});
  w.g_idx = DeviceBuffer<std::int32_t>(std::vector<std::int32_t>{1, 0, 1, 0});
  const DeviceBuffer<float> x(std::vector<float>{1.0f, 1.0f, 1.0f, 1.0f});
  for (int version = 1; version <= kQGemvVersions; ++version) {
    DeviceBuffer<float> y(1);
    launch_qgemv_version(version, w.view(), x.get(), y.get(), 1, nullptr);
    EXPECT_EQ(y.to_host(), std::vector<float>{0.5f}) << "v0" << version;
  }
}

// ---------------------------------------------------------------------------------------------
// Arguments

using QuantGemvArgs = testing::DeviceTest;

// A valid 4 x 64 INT4 view over real buffers; tests break one field at a time.
struct ValidArgs {
  DeviceBuffer<std::uint8_t> codes{std::vector<std::uint8_t>(4 * 32, 0x88)};
  DeviceBuffer<std::uint16_t> scales{std::vector<std::uint16_t>(4 * 2, kFp16Half)};
  DeviceBuffer<float> x{std::vector<float>(64 * 2, 1.0f)};
  DeviceBuffer<float> y{8};
  QuantizedWeightView view() const {
    QuantizedWeightView v;
    v.qweight = codes.get();
    v.scales = reinterpret_cast<const __half*>(scales.get());
    v.rows = 4;
    v.cols = 64;
    v.bits = 4;
    v.group_size = 32;
    return v;
  }
};

// Expects every version to throw std::invalid_argument mentioning `fragment`.
template <typename Run>
void expect_rejected(Run run, const std::string& fragment) {
  for (int version = 1; version <= kQGemvVersions; ++version) {
    try {
      run(version);
      ADD_FAILURE() << "v0" << version << " accepted an argument that should mention '"
                    << fragment << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos)
          << "v0" << version << ": " << e.what();
    }
  }
}

TEST_F(QuantGemvArgs, ValidArgumentsRun) {
  // The baseline the rejection tests break: all codes 8 = z, so W = 0 and y = 0.
  ValidArgs a;
  for (int version = 1; version <= kQGemvVersions; ++version) {
    launch_qgemv_version(version, a.view(), a.x.get(), a.y.get(), 2, nullptr);
    EXPECT_EQ(a.y.to_host(), std::vector<float>(8, 0.0f)) << "v0" << version;
  }
}

TEST_F(QuantGemvArgs, RejectsBitsOtherThanFourOrEight) {
  ValidArgs a;
  QuantizedWeightView v = a.view();
  v.bits = 3;
  expect_rejected([&](int ver) { launch_qgemv_version(ver, v, a.x.get(), a.y.get(), 1, nullptr); },
                  "bits = 3");
}

TEST_F(QuantGemvArgs, RejectsZeroGroupSize) {
  ValidArgs a;
  QuantizedWeightView v = a.view();
  v.group_size = 0;
  expect_rejected([&](int ver) { launch_qgemv_version(ver, v, a.x.get(), a.y.get(), 1, nullptr); },
                  "group_size = 0");
}

TEST_F(QuantGemvArgs, RejectsMisalignedBuffers) {
  ValidArgs a;
  QuantizedWeightView v = a.view();
  v.scales = reinterpret_cast<const __half*>(reinterpret_cast<const char*>(a.scales.get()) + 1);
  expect_rejected([&](int ver) { launch_qgemv_version(ver, v, a.x.get(), a.y.get(), 1, nullptr); },
                  "scales is not 2-byte aligned");
  const float* x_odd = reinterpret_cast<const float*>(reinterpret_cast<const char*>(a.x.get()) + 2);
  expect_rejected(
      [&](int ver) { launch_qgemv_version(ver, a.view(), x_odd, a.y.get(), 1, nullptr); },
      "x is not 4-byte aligned");
}

TEST_F(QuantGemvArgs, RejectsNullBuffersAndNegativeSizes) {
  ValidArgs a;
  QuantizedWeightView no_codes = a.view();
  no_codes.qweight = nullptr;
  expect_rejected(
      [&](int ver) { launch_qgemv_version(ver, no_codes, a.x.get(), a.y.get(), 1, nullptr); },
      "qweight is null");
  QuantizedWeightView no_scales = a.view();
  no_scales.scales = nullptr;
  expect_rejected(
      [&](int ver) { launch_qgemv_version(ver, no_scales, a.x.get(), a.y.get(), 1, nullptr); },
      "scales is null");
  expect_rejected(
      [&](int ver) { launch_qgemv_version(ver, a.view(), nullptr, a.y.get(), 1, nullptr); },
      "x is null");
  expect_rejected(
      [&](int ver) { launch_qgemv_version(ver, a.view(), a.x.get(), nullptr, 1, nullptr); },
      "y is null");
  expect_rejected(
      [&](int ver) { launch_qgemv_version(ver, a.view(), a.x.get(), a.y.get(), -1, nullptr); },
      "batch = -1");
  QuantizedWeightView negative = a.view();
  negative.rows = -4;
  expect_rejected(
      [&](int ver) { launch_qgemv_version(ver, negative, a.x.get(), a.y.get(), 1, nullptr); },
      "rows = -4");
}

TEST_F(QuantGemvArgs, EmptyBatchOrRowsLaunchNothingAndEmptyColumnsGiveZeros) {
  ValidArgs a;
  QuantizedWeightView no_rows = a.view();
  no_rows.rows = 0;
  QuantizedWeightView no_cols = a.view();
  no_cols.cols = 0;
  no_cols.qweight = nullptr;  // nothing is read
  no_cols.scales = nullptr;
  for (int version = 1; version <= kQGemvVersions; ++version) {
    EXPECT_NO_THROW(launch_qgemv_version(version, a.view(), nullptr, nullptr, 0, nullptr));
    EXPECT_NO_THROW(launch_qgemv_version(version, no_rows, nullptr, nullptr, 1, nullptr));
    DeviceBuffer<float> y(std::vector<float>{5.0f, 6.0f, 7.0f, 8.0f});
    launch_qgemv_version(version, no_cols, nullptr, y.get(), 1, nullptr, Epilogue::kAccumulate);
    EXPECT_EQ(y.to_host(), (std::vector<float>{5.0f, 6.0f, 7.0f, 8.0f})) << "v0" << version;
    launch_qgemv_version(version, no_cols, nullptr, y.get(), 1, nullptr);
    EXPECT_EQ(y.to_host(), std::vector<float>(4, 0.0f)) << "v0" << version;
  }
}

TEST_F(QuantGemvArgs, RejectsUnknownVersion) {
  ValidArgs a;
  for (int version : {0, kQGemvVersions + 1}) {
    EXPECT_THROW(launch_qgemv_version(version, a.view(), a.x.get(), a.y.get(), 1, nullptr),
                 std::invalid_argument);
  }
}

}  // namespace
}  // namespace nanoserve
