// Round-to-nearest quantization (common/quant/quant_scheme.h, rtn.h): hand-computed codes for
// both schemes, the documented tie rule, fp16 scales rounded up, and the half-step bound.
#include <gtest/gtest.h>

#include <cmath>

#include "common/error.h"
#include "common/loaders/half_float.h"
#include "common/quant/rtn.h"
#include "quant_test_support.h"

namespace nanoserve::quant {
namespace {

/// Codes of row `r` of `q`.
std::vector<int> row_codes(const QuantizedLinear& q, int r) {
  std::vector<int> c;
  for (int j = 0; j < q.cols; ++j) c.push_back(q.code(r, j));
  return c;
}

TEST(QuantRtn, SymmetricInt4MatchesHandComputedCodesWithTiesToEven) {
  // max|w| = 7 -> s = 7 / (2^3 - 1) = 1 (exact in fp16), z = 8, q = round(w) + 8.
  // Ties: -2.5 -> -2, 2.5 -> 2, 3.5 -> 4 (half to even).
  const std::vector<float> w = {-7.0f, -2.5f, 0.0f, 2.5f, 3.5f, 7.0f, 0.4f, -0.6f};
  const QuantizedLinear q = quantize_rtn(w.data(), 1, 8, {4, 0, true});
  EXPECT_EQ(row_codes(q, 0), (std::vector<int>{1, 6, 8, 10, 12, 15, 8, 7}));
  EXPECT_EQ(q.params(0, 0).scale, 1.0f);
  EXPECT_EQ(q.dequantize(), (std::vector<float>{-7, -2, 0, 2, 4, 7, 0, -1}));
  EXPECT_TRUE(q.zeros.empty());
}

TEST(QuantRtn, AsymmetricInt4MatchesHandComputedCodes) {
  // Range [min(-1, 0), max(14, 0)] = [-1, 14]: s = 15 / 15 = 1, z = round(1 / 1) = 1,
  // q = round(w) + 1; 2.5 ties to 2 -> code 3 -> 1 · (3 - 1) = 2.
  const std::vector<float> w = {-1.0f, 0.0f, 2.5f, 14.0f};
  const QuantizedLinear q = quantize_rtn(w.data(), 1, 4, {4, 0, false});
  EXPECT_EQ(row_codes(q, 0), (std::vector<int>{0, 1, 3, 15}));
  EXPECT_EQ(q.params(0, 0).zero, 1.0f);
  EXPECT_EQ(q.dequantize(), (std::vector<float>{-1, 0, 2, 14}));
}

TEST(QuantRtn, AsymmetricRangeAlwaysContainsZero) {
  // All positive: lo = 0, so z = 0 and 0 stays exactly representable.
  const std::vector<float> w = {3.0f, 6.0f, 15.0f, 9.0f};
  const QuantizedLinear q = quantize_rtn(w.data(), 1, 4, {4, 0, false});
  EXPECT_EQ(q.params(0, 0).zero, 0.0f);
  EXPECT_EQ(q.params(0, 0).scale, 1.0f);
  EXPECT_EQ(row_codes(q, 0), (std::vector<int>{3, 6, 15, 9}));
}

TEST(QuantRtn, ScaleIsRoundedUpToTheNextFp16) {
  // 1/7 is not an fp16; the stored scale is the smallest fp16 >= 1/7.
  const uint16_t h = fp16_round_up(1.0f / 7.0f);
  EXPECT_GE(fp16_to_fp32(h), 1.0f / 7.0f);
  EXPECT_LT(fp16_to_fp32(uint16_t(h - 1)), 1.0f / 7.0f);
  EXPECT_EQ(fp16_round_up(1.0f), 0x3C00);  // exact values stay
  EXPECT_THROW(fp16_round_up(70000.0f), InvalidArgument);
}

TEST(QuantRtn, ErrorIsAtMostHalfAStepForEveryElement) {
  const int rows = 5, cols = 172;  // stories260K's hidden width: a partial last group
  const std::vector<float> w = testing::weights_with_outliers(3, size_t(rows * cols), 29, 12.0f);
  for (int bits : {4, 8}) {
    for (int group : {0, 32, 64, 128}) {
      for (bool sym : {true, false}) {
        const QuantScheme s{bits, group, sym};
        const QuantizedLinear q = quantize_rtn(w.data(), rows, cols, s);
        const std::vector<float> wq = q.dequantize();
        for (int r = 0; r < rows; ++r) {
          for (int c = 0; c < cols; ++c) {
            const float step = q.params(r, q.group_of(c)).scale;
            const float err = std::fabs(w[size_t(r * cols + c)] - wq[size_t(r * cols + c)]);
            ASSERT_LE(err, 0.5f * step * (1.0f + 1e-6f)) << s.label() << " at " << r << "," << c;
          }
        }
      }
    }
  }
}

TEST(QuantRtn, PartialLastGroupGetsItsOwnScale) {
  // 172 = 5 * 32 + 12: six groups; the last one's scale comes from its 12 columns only.
  const int cols = 172;
  std::vector<float> w(cols, 1.0f);
  for (int c = 160; c < cols; ++c) w[size_t(c)] = 0.07f;
  const QuantizedLinear q = quantize_rtn(w.data(), 1, cols, {8, 32, true});
  ASSERT_EQ(q.groups(), 6);
  EXPECT_EQ(q.group_of(171), 5);
  EXPECT_EQ(q.params(0, 0).scale, fp16_to_fp32(fp16_round_up(1.0f / 127)));
  EXPECT_EQ(q.params(0, 5).scale, fp16_to_fp32(fp16_round_up(0.07f / 127)));
}

TEST(QuantRtn, GroupLargerThanRowIsPerChannel) {
  const QuantScheme s{4, 128, true};
  EXPECT_EQ(s.groups(64), 1);
  EXPECT_EQ(s.group_width(64), 64);
  EXPECT_EQ((QuantScheme{4, 0, true}).groups(384), 1);
  EXPECT_EQ(s.groups(384), 3);
}

TEST(QuantRtn, AllZeroGroupDequantizesToZero) {
  const std::vector<float> w(32, 0.0f);
  for (bool sym : {true, false}) {
    const QuantizedLinear q = quantize_rtn(w.data(), 1, 32, {4, 32, sym});
    EXPECT_EQ(q.dequantize(), w);
  }
}

TEST(QuantRtn, FakeQuantizationEqualsDequantizedPackedResult) {
  const std::vector<float> w = testing::random_weights(8, 6 * 100);
  for (bool sym : {true, false}) {
    const QuantScheme s{4, 32, sym};
    EXPECT_EQ(fake_quantize_rtn(w.data(), 6, 100, s), quantize_rtn(w.data(), 6, 100, s).dequantize());
  }
}

TEST(QuantRtn, StorageBytesCountCodesScalesAndZeros) {
  const std::vector<float> w = testing::random_weights(9, 64 * 128);
  // INT4 g32: 64 rows x 64 bytes of codes + 64 x 4 groups x 2 bytes of scales.
  EXPECT_EQ(quantize_rtn(w.data(), 64, 128, {4, 32, true}).bytes(), 64 * 64 + 64 * 4 * 2);
  // Asymmetric adds as many fp16 zero points.
  EXPECT_EQ(quantize_rtn(w.data(), 64, 128, {4, 32, false}).bytes(), 64 * 64 + 2 * 64 * 4 * 2);
  EXPECT_EQ(quantize_rtn(w.data(), 64, 128, {8, 0, true}).bytes(), 64 * 128 + 64 * 2);
}

TEST(QuantRtn, RejectsUnsupportedSchemes) {
  const std::vector<float> w(8, 1.0f);
  EXPECT_THROW(quantize_rtn(w.data(), 1, 8, {3, 0, true}), InvalidArgument);
  EXPECT_THROW(quantize_rtn(w.data(), 1, 8, {4, -1, true}), InvalidArgument);
  EXPECT_THROW(quantize_rtn(w.data(), 0, 8, {4, 0, true}), InvalidArgument);
}

}  // namespace
}  // namespace nanoserve::quant
