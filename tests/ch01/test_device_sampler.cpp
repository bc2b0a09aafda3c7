// engine::DeviceSampler: the host sampler's tokens from device logits, with the host's errors for
// bad parameters and bad logits.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "common/engine/model/device_info.h"
#include "common/engine/model/device_sampler.h"
#include "common/error.h"
#include "common/sampling/rng.h"
#include "common/sampling/sampler.h"
#include "common/tolerances.h"
#include "engine_test_support.h"
#include "kernels/device_buffer.h"

namespace nanoserve::engine {
namespace {

std::vector<float> random_logits(std::uint64_t seed, std::size_t n) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    v[i] = float(8.0 * uniform01(seed, i, RngStream::kWeights) - 4.0);
  }
  return v;
}

SamplingParams params(float t, int k, float p, float m, std::uint64_t seed) {
  SamplingParams s;
  s.temperature = t;
  s.top_k = k;
  s.top_p = p;
  s.min_p = m;
  s.seed = seed;
  return s;
}

// The message `run` throws as InvalidArgument ("" if it does not throw).
template <typename F>
std::string invalid_argument_message(F&& run) {
  try {
    run();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

// The example of use in device_sampler.h: two rows of logits on the device, one greedy and one
// sampled with top-k 2; only the token ids (and logprobs) come back.
TEST(Ch01DeviceSampler, Example) {
  NANOSERVE_REQUIRE_DEVICE();
  //! [DeviceSampler]
  const std::vector<float> logits = {0.5f, 3.0f, 1.0f, 2.0f,   // row 0: greedy picks id 1
                                     4.0f, 1.0f, 4.0f, -1.0f};  // row 1: top-2 keeps ids 0, 2
  const DeviceBuffer<float> on_device(logits);
  DeviceSampler sampler(/*max_rows=*/2, /*vocab=*/4);
  SamplingParams greedy;
  greedy.temperature = 0.0f;
  SamplingParams top2;
  top2.temperature = 1.0f;
  top2.top_k = 2;
  top2.seed = 7;
  std::vector<float> logprobs;
  const std::vector<int> tokens =
      sampler.sample(on_device.get(), {greedy, top2}, /*positions=*/{10, 3}, &logprobs);
  EXPECT_EQ(tokens[0], 1);
  EXPECT_TRUE(tokens[1] == 0 || tokens[1] == 2);
  // The same decisions as the host sampler, for the same (seed, position).
  EXPECT_EQ(tokens[1], sample(logits.data() + 4, 4, top2, 3));
  //! [DeviceSampler]
  EXPECT_EQ(logprobs.size(), 2u);
}

TEST(Ch01DeviceSampler, SameTokensAndLogprobsAsTheHostSampler) {
  NANOSERVE_REQUIRE_DEVICE();
  constexpr int kRows = 6, kVocab = 300;
  const std::vector<float> logits = random_logits(3, std::size_t(kRows) * kVocab);
  const DeviceBuffer<float> d_logits(logits);
  const std::vector<SamplingParams> ps = {params(0, 0, 1, 0, 1),      params(1, 0, 1, 0, 2),
                                          params(0.7f, 5, 1, 0, 3),   params(1, 0, 0.9f, 0, 4),
                                          params(1.2f, 0, 1, 0.1f, 5), params(0.9f, 20, 0.8f, 0.02f, 6)};
  DeviceSampler sampler(8, kVocab);
  for (std::uint64_t step = 0; step < 5; ++step) {
    std::vector<std::uint64_t> positions;
    for (int r = 0; r < kRows; ++r) positions.push_back(step * 10 + std::uint64_t(r));
    std::vector<float> logprobs;
    const std::vector<int> got = sampler.sample(d_logits.get(), ps, positions, &logprobs);
    ASSERT_EQ(got.size(), std::size_t(kRows));
    ASSERT_EQ(logprobs.size(), std::size_t(kRows));
    for (int r = 0; r < kRows; ++r) {
      const float* row = logits.data() + std::size_t(r) * kVocab;
      EXPECT_EQ(got[std::size_t(r)], sample(row, kVocab, ps[std::size_t(r)], positions[std::size_t(r)]))
          << "step " << step << " row " << r;
      const double want = token_logprob(row, kVocab, got[std::size_t(r)]);
      EXPECT_NEAR(logprobs[std::size_t(r)], want,
                  tol::kDeviceSamplingLogprob.atol + tol::kDeviceSamplingLogprob.rtol * std::fabs(want));
    }
  }
}

TEST(Ch01DeviceSampler, BadParametersGiveTheHostsError) {
  NANOSERVE_REQUIRE_DEVICE();
  const DeviceBuffer<float> d_logits(std::vector<float>{1, 2, 3, 4});
  DeviceSampler sampler(2, 4);
  for (const SamplingParams& bad : {params(-1, 0, 1, 0, 0), params(1, -3, 1, 0, 0),
                                    params(1, 0, 0, 0, 0), params(1, 0, 1.5f, 0, 0),
                                    params(1, 0, 1, 2, 0), params(NAN, 0, 1, 0, 0)}) {
    const std::string host = invalid_argument_message([&] { bad.validate(); });
    ASSERT_FALSE(host.empty());
    EXPECT_EQ(invalid_argument_message([&] { sampler.sample(d_logits.get(), {bad}, {0}); }), host);
  }
}

TEST(Ch01DeviceSampler, BadLogitsGiveTheHostsError) {
  NANOSERVE_REQUIRE_DEVICE();
  const std::vector<std::vector<float>> rows = {
      {1, NAN, 3}, {1, INFINITY, 3}, {-INFINITY, -INFINITY, -INFINITY}};
  DeviceSampler sampler(2, 3);
  for (const std::vector<float>& row : rows) {
    for (float t : {0.0f, 1.0f}) {
      const DeviceBuffer<float> d_logits(row);
      const SamplingParams p = params(t, 0, 1, 0, 0);
      const std::string host = invalid_argument_message([&] { sample(row.data(), 3, p, 0); });
      ASSERT_FALSE(host.empty());
      EXPECT_EQ(invalid_argument_message([&] { sampler.sample(d_logits.get(), {p}, {0}); }), host);
    }
  }
}

TEST(Ch01DeviceSampler, RefusesMisshapenCalls) {
  NANOSERVE_REQUIRE_DEVICE();
  EXPECT_THROW(DeviceSampler(0, 10), InvalidArgument);
  EXPECT_THROW(DeviceSampler(1, 0), InvalidArgument);
  DeviceSampler sampler(1, 3);
  const DeviceBuffer<float> d_logits(std::vector<float>(6, 0.0f));
  const SamplingParams p = params(1, 0, 1, 0, 0);
  EXPECT_THROW(sampler.sample(d_logits.get(), {p, p}, {0, 1}), InvalidArgument);  // > max_rows
  EXPECT_THROW(sampler.sample(d_logits.get(), {p}, {0, 1}), InvalidArgument);     // sizes
  EXPECT_TRUE(sampler.sample(d_logits.get(), {}, {}).empty());
}

}  // namespace
}  // namespace nanoserve::engine
