// Device sampling steps against the host Sampler (common/sampling/sampler.h): argmax and its
// tie rule, temperature probabilities, and the inverse-CDF draw.
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/sampling/rng.h"
#include "common/sampling/sampler.h"
#include "common/tolerances.h"
#include "kernels/device_buffer.h"
#include "kernels/sampling.h"
#include "tests/kernels/kernel_oracle_support.h"
#include "tests/kernels/kernel_test_support.h"

namespace nanoserve {
namespace {

using testing::random_values;

using Sampling = testing::DeviceTest;

std::vector<int> device_argmax(const std::vector<float>& logits, int rows, int vocab) {
  DeviceBuffer<float> d_logits(logits);
  DeviceBuffer<int> d_tokens(rows);
  launch_argmax(d_logits.get(), rows, vocab, d_tokens.get(), nullptr);
  return d_tokens.to_host();
}

TEST_F(Sampling, ArgmaxMatchesTheHostOnRandomRows) {
  for (int vocab : {1, 3, 17, 257, 1000}) {
    constexpr int kRows = 3;
    const std::vector<float> logits = random_values(10, vocab, std::size_t(kRows) * vocab, 5.0f);
    const std::vector<int> got = device_argmax(logits, kRows, vocab);
    for (int r = 0; r < kRows; ++r) {
      EXPECT_EQ(got[r], argmax(logits.data() + std::size_t(r) * vocab, vocab))
          << "vocab=" << vocab << " row=" << r;
    }
  }
}

TEST_F(Sampling, ArgmaxBreaksTiesTowardTheLowestId) {
  // Row 0: tie inside one thread's reach; row 1: ties held by different threads and warps
  // (ids 300 and 700 of 1000 with a 256-thread block); row 2: all -inf gives id 0 like the host.
  constexpr int kVocab = 1000;
  std::vector<float> logits(3 * kVocab, 0.0f);
  logits[1] = logits[2] = 5.0f;
  logits[kVocab + 700] = logits[kVocab + 300] = 2.0f;
  for (int i = 0; i < kVocab; ++i) logits[2 * kVocab + i] = -INFINITY;
  EXPECT_EQ(device_argmax(logits, 3, kVocab), (std::vector<int>{1, 300, 0}));
}

TEST_F(Sampling, ArgmaxOfARowWithNanIsMinusOne) {
  std::vector<float> logits = {1, 2, 3, 4, 5, 6};
  logits[4] = NAN;
  EXPECT_EQ(device_argmax(logits, 2, 3), (std::vector<int>{2, -1}));
}

TEST_F(Sampling, ProbabilitiesMatchTheHostSamplerWithoutFilters) {
  constexpr int kVocab = 1000;
  const std::vector<float> temps = {1.0f, 0.5f, 2.0f, 0.0f};
  const int rows = int(temps.size());
  std::vector<float> logits = random_values(11, 0, std::size_t(rows) * kVocab, 6.0f);
  logits[3] = -INFINITY;  // masked token: probability 0
  DeviceBuffer<float> d_logits(logits), d_temps(temps), d_probs(logits.size());
  launch_sampling_probs(d_logits.get(), d_temps.get(), rows, kVocab, d_probs.get(), nullptr);
  const std::vector<float> got = d_probs.to_host();
  for (int r = 0; r < rows; ++r) {
    SamplingParams params;
    params.temperature = temps[r];
    const std::vector<double> host = probabilities(logits.data() + std::size_t(r) * kVocab, kVocab,
                                                   params);
    const std::vector<float> want(host.begin(), host.end());
    const std::vector<float> row(got.begin() + std::size_t(r) * kVocab,
                                 got.begin() + std::size_t(r + 1) * kVocab);
    testing::expect_close(row, want, tol::kDeviceSamplingProbs, "t=" + std::to_string(temps[r]));
  }
  EXPECT_EQ(got[3], 0.0f);
}

TEST_F(Sampling, ProbabilitiesOfABadTemperatureAreNan) {
  DeviceBuffer<float> d_logits(std::vector<float>{1, 2, 3, 4}), d_temps(std::vector<float>{-1.0f, NAN});
  DeviceBuffer<float> d_probs(4);
  launch_sampling_probs(d_logits.get(), d_temps.get(), 2, 2, d_probs.get(), nullptr);
  for (float p : d_probs.to_host()) EXPECT_TRUE(std::isnan(p));
}

int device_sample(const std::vector<float>& weights, float u) {
  DeviceBuffer<float> d_w(weights), d_u(std::vector<float>{u});
  DeviceBuffer<int> d_token(1);
  launch_sample_from(d_w.get(), d_u.get(), 1, int(weights.size()), d_token.get(), nullptr);
  return d_token.to_host()[0];
}

TEST_F(Sampling, SampleFromWalksTheCdfInIdOrder) {
  // Weights (0, 1, 0, 3), sum 4: u*4 < 1 picks id 1, otherwise id 3; id 0 and 2 never.
  const std::vector<float> w = {0, 1, 0, 3};
  EXPECT_EQ(device_sample(w, 0.0f), 1);
  EXPECT_EQ(device_sample(w, 0.24f), 1);
  EXPECT_EQ(device_sample(w, 0.26f), 3);
  EXPECT_EQ(device_sample(w, 0.999f), 3);
}

TEST_F(Sampling, SampleFromMatchesTheHostAcrossTiles) {
  // 1000 weights span four 256-id tiles; the draws are the sampler's own Philox uniforms.
  constexpr int kVocab = 1000, kRows = 16;
  std::vector<float> weights = random_values(12, 0, std::size_t(kRows) * kVocab, 1.0f, 1.0f);
  std::vector<float> u(kRows);
  for (int r = 0; r < kRows; ++r) u[r] = float(uniform01(12, r, RngStream::kSample));
  DeviceBuffer<float> d_w(weights), d_u(u);
  DeviceBuffer<int> d_tokens(kRows);
  launch_sample_from(d_w.get(), d_u.get(), kRows, kVocab, d_tokens.get(), nullptr);
  const std::vector<int> got = d_tokens.to_host();
  for (int r = 0; r < kRows; ++r) {
    const std::vector<double> row(weights.begin() + std::size_t(r) * kVocab,
                                  weights.begin() + std::size_t(r + 1) * kVocab);
    EXPECT_EQ(got[r], sample_from(row, u[r])) << "row " << r << " u=" << u[r];
  }
}

TEST_F(Sampling, SampleFromRejectsInvalidRowsWithMinusOne) {
  EXPECT_EQ(device_sample({0, 0, 0}, 0.5f), -1);       // nothing to draw
  EXPECT_EQ(device_sample({1, -1, 3}, 0.5f), -1);      // negative weight
  EXPECT_EQ(device_sample({1, NAN, 3}, 0.5f), -1);     // NaN weight
  EXPECT_EQ(device_sample({1, 2, 3}, 1.0f), -1);       // u outside [0, 1)
}

TEST(SamplingArgs, RejectsBadSizes) {
  EXPECT_THROW(launch_argmax(nullptr, -1, 5, nullptr, nullptr), std::invalid_argument);
  EXPECT_THROW(launch_argmax(nullptr, 1, 0, nullptr, nullptr), std::invalid_argument);
  EXPECT_THROW(launch_sampling_probs(nullptr, nullptr, 1, 0, nullptr, nullptr),
               std::invalid_argument);
  EXPECT_THROW(launch_sample_from(nullptr, nullptr, -2, 5, nullptr, nullptr),
               std::invalid_argument);
  EXPECT_NO_THROW(launch_argmax(nullptr, 0, 5, nullptr, nullptr));
}

}  // namespace
}  // namespace nanoserve
