// RoPE frequency tables: the plain one, linear scaling, and Llama 3.1's llama3 rule against
// values worked out by hand from transformers' `_compute_llama3_parameters`.
#include <gtest/gtest.h>

#include <cmath>

#include "common/error.h"
#include "common/model_config.h"
#include "common/oracle/rope.h"
#include "common/rope_frequencies.h"
#include "common/tolerances.h"

namespace nanoserve {
namespace {

/// Llama-3.1-8B's rope_scaling: factor 8, low 1, high 4, original context 8192.
const RopeScaling kLlama31{RopeScalingType::kLlama3, 8.0f, 1.0f, 4.0f, 8192};

TEST(RopeFrequencies, PlainTableIsTheOraclesPerPairFrequency) {
  const std::vector<float> f = rope_base_frequencies(128, 500000.0f);
  ASSERT_EQ(f.size(), 64u);
  for (int i = 0; i < 64; ++i) EXPECT_EQ(f[size_t(i)], oracle::rope_frequency(i, 128, 500000.0f));
  EXPECT_EQ(rope_scaled_frequencies(128, 500000.0f, {}), f);
}

TEST(RopeFrequencies, LinearDividesEveryFrequencyByTheFactor) {
  const std::vector<float> base = rope_base_frequencies(64, 10000.0f);
  const std::vector<float> f =
      rope_scaled_frequencies(64, 10000.0f, {RopeScalingType::kLinear, 4.0f});
  for (size_t i = 0; i < f.size(); ++i) EXPECT_EQ(f[i], base[i] / 4.0f) << i;
}

TEST(RopeFrequencies, Llama3KeepsFastPairsDividesSlowOnesAndBlendsBetween) {
  // head_dim 128, theta 5e5: inv_i = 5e5^(-i/64), wavelength 2π / inv_i. With the original
  // context 8192: λ < 8192/4 = 2048 is kept, λ > 8192/1 = 8192 divided by 8, and between them
  // s = (8192/λ - 1) / 3 blends  (1 - s) inv/8 + s inv.  Worked in double precision:
  //   i   inv_i                  λ            rule     result
  //   0   1                      6.283        kept     1
  //   25  5.940730375674967e-3   1057.6       kept     5.940730375674967e-3
  //   30  2.1311195369119653e-3  2948.3       blend    1.3718935677611381e-3  (s = 0.59285)
  //   35  7.644969883171747e-4   8218.7       divided  9.556212353964683e-5
  //   63  2.455140791131609e-6   2.56e6       divided  3.068925988914511e-7
  const std::vector<float> f = rope_scaled_frequencies(128, 500000.0f, kLlama31);
  const std::pair<int, double> want[] = {{0, 1.0},
                                         {25, 5.940730375674967e-3},
                                         {30, 1.3718935677611381e-3},
                                         {35, 9.556212353964683e-5},
                                         {63, 3.068925988914511e-7}};
  for (const auto& [i, w] : want) {
    EXPECT_NEAR(f[size_t(i)], w, w * tol::kFp32VsFp64.rtol) << "pair " << i;
  }
  // Bands: the unscaled value where kept, exactly a division by the factor where divided.
  const std::vector<float> base = rope_base_frequencies(128, 500000.0f);
  EXPECT_EQ(f[25], base[25]);
  EXPECT_EQ(f[35], base[35] / 8.0f);
  EXPECT_EQ(f[63], base[63] / 8.0f);
  EXPECT_LT(f[30], base[30]);
  EXPECT_GT(f[30], base[30] / 8.0f);
  // Monotone: a higher pair never turns faster.
  for (size_t i = 1; i < f.size(); ++i) EXPECT_LE(f[i], f[i - 1]) << i;
}

TEST(RopeFrequencies, TheOracleRotatesByTheScaledTable) {
  // One head of 4 values, the first of each pair 1: after RoPE at position p pair i holds
  // (cos p f_i, sin p f_i) in the rotate-half layout (x0, x2) and (x1, x3).
  ModelConfig c;
  c.head_dim = 4;
  c.rope_theta = 10000.0f;
  c.rope_scaling = {RopeScalingType::kLinear, 2.0f};
  const std::vector<float> f = rope_frequencies(c);
  std::vector<float> x = {1.0f, 1.0f, 0.0f, 0.0f};
  const int pos = 7;
  oracle::rope(x.data(), &pos, 1, 1, 4, f.data(), RopeStyle::kRotateHalf);
  EXPECT_FLOAT_EQ(x[0], std::cos(7.0f * 0.5f));  // f_0 = 1 / 2
  EXPECT_FLOAT_EQ(x[2], std::sin(7.0f * 0.5f));
  EXPECT_FLOAT_EQ(x[1], std::cos(7.0f * (0.01f / 2.0f)));  // f_1 = 10000^(-1/2) / 2
  EXPECT_FLOAT_EQ(x[3], std::sin(7.0f * (0.01f / 2.0f)));
}

TEST(RopeFrequencies, ConfigValidationRefusesAnUnusableLlama3Rule) {
  ModelConfig c;
  c.dim = 8, c.hidden_dim = 8, c.n_layers = 1, c.n_heads = 2, c.n_kv_heads = 2, c.head_dim = 4;
  c.vocab_size = 4, c.max_seq_len = 4;
  c.rope_scaling = {RopeScalingType::kLlama3, 8.0f, 4.0f, 4.0f, 8192};  // low == high: 0/0
  EXPECT_THROW(c.validate("c"), LoadError);
  c.rope_scaling = {RopeScalingType::kLinear, 0.0f};
  EXPECT_THROW(c.validate("c"), LoadError);
  c.rope_scaling = kLlama31;
  EXPECT_NO_THROW(c.validate("c"));
}

}  // namespace
}  // namespace nanoserve
