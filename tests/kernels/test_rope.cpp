// RoPE against oracle::rope applied to q and to k, in both pairing conventions.
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/model_config.h"
#include "common/oracle/rope.h"
#include "common/rope_frequencies.h"
#include "common/tolerances.h"
#include "kernels/device_buffer.h"
#include "kernels/rope.h"
#include "tests/kernels/kernel_oracle_support.h"
#include "tests/kernels/kernel_test_support.h"

namespace nanoserve {
namespace {

using testing::random_values;

using Rope = testing::DeviceTest;

RopeStyle oracle_style(RopePairing pairing) {
  return pairing == RopePairing::kAdjacentPairs ? RopeStyle::kAdjacentPairs
                                                : RopeStyle::kRotateHalf;
}

// Rotates q (rows, n_heads, head_dim) and k (rows, n_kv_heads, head_dim) on the device and
// with the oracle, and compares both.
void check(const std::vector<int>& positions, int n_heads, int n_kv_heads, int head_dim,
           float theta, RopePairing pairing) {
  const int rows = int(positions.size());
  std::vector<float> q = random_values(5, head_dim, std::size_t(rows) * n_heads * head_dim, 1.0f);
  std::vector<float> k = random_values(6, head_dim, std::size_t(rows) * n_kv_heads * head_dim, 1.0f);
  DeviceBuffer<float> d_q(q), d_k(k);
  DeviceBuffer<int> d_pos(positions);
  launch_rope(d_q.get(), d_k.get(), d_pos.get(), rows, n_heads, n_kv_heads, head_dim, theta,
              pairing, nullptr);
  oracle::rope(q.data(), positions.data(), rows, n_heads, head_dim, theta, oracle_style(pairing));
  oracle::rope(k.data(), positions.data(), rows, n_kv_heads, head_dim, theta,
               oracle_style(pairing));
  const std::string context = std::string(pairing == RopePairing::kAdjacentPairs ? "adjacent" : "half") +
                              " head_dim=" + std::to_string(head_dim);
  testing::expect_close(d_q.to_host(), q, tol::kKernelVsOracle, "q " + context);
  testing::expect_close(d_k.to_host(), k, tol::kKernelVsOracle, "k " + context);
}

TEST_F(Rope, MatchesTheOracleInBothConventions) {
  const std::vector<int> positions = {0, 1, 17, 255, 256, 257, 4095};
  for (RopePairing pairing : {RopePairing::kAdjacentPairs, RopePairing::kRotateHalf}) {
    for (int head_dim : {2, 8, 16, 64, 128, 256}) {
      check(positions, 4, 2, head_dim, 10000.0f, pairing);
    }
  }
}

TEST_F(Rope, MatchesTheOracleFarIntoTheContextBecauseAnglesAreFormedTheSameWay) {
  // At position 100000 a frequency one ulp away from the oracle's would move the angle of the
  // fastest pair by ~6e-3 rad, far outside the tolerance: only identical fp32 angles pass.
  check({100000, 131071}, 2, 1, 64, 500000.0f, RopePairing::kRotateHalf);
  check({100000, 131071}, 2, 1, 64, 10000.0f, RopePairing::kAdjacentPairs);
}

TEST_F(Rope, RotatesAHandComputedPair) {
  // head_dim 2, position 1, pair 0 has frequency theta^0 = 1: (1, 0) turns by 1 rad.
  DeviceBuffer<float> d_q(std::vector<float>{1, 0});
  DeviceBuffer<float> d_k(std::vector<float>{0, 2});
  DeviceBuffer<int> d_pos(std::vector<int>{1});
  launch_rope(d_q.get(), d_k.get(), d_pos.get(), 1, 1, 1, 2, 10000.0f,
              RopePairing::kAdjacentPairs, nullptr);
  const std::vector<float> q = d_q.to_host(), k = d_k.to_host();
  EXPECT_NEAR(q[0], std::cos(1.0), 1e-6);
  EXPECT_NEAR(q[1], std::sin(1.0), 1e-6);
  EXPECT_NEAR(k[0], -2 * std::sin(1.0), 1e-6);
  EXPECT_NEAR(k[1], 2 * std::cos(1.0), 1e-6);
}

TEST_F(Rope, AScaledFrequencyTableMatchesTheOracleWithTheSameTable) {
  // Llama 3.1's llama3 rule (common/rope_frequencies.h): the kernel turns by the table given.
  const std::vector<float> inv =
      rope_scaled_frequencies(128, 500000.0f, {RopeScalingType::kLlama3, 8.0f, 1.0f, 4.0f, 8192});
  const std::vector<int> positions = {0, 5, 8191, 8192, 100000};
  const int rows = int(positions.size());
  std::vector<float> q = random_values(7, 128, std::size_t(rows) * 4 * 128, 1.0f);
  std::vector<float> k = random_values(8, 128, std::size_t(rows) * 2 * 128, 1.0f);
  DeviceBuffer<float> d_q(q), d_k(k);
  DeviceBuffer<int> d_pos(positions);
  launch_rope(d_q.get(), d_k.get(), d_pos.get(), rows, 4, 2, 128, inv.data(),
              RopePairing::kRotateHalf, nullptr);
  oracle::rope(q.data(), positions.data(), rows, 4, 128, inv.data(), RopeStyle::kRotateHalf);
  oracle::rope(k.data(), positions.data(), rows, 2, 128, inv.data(), RopeStyle::kRotateHalf);
  testing::expect_close(d_q.to_host(), q, tol::kKernelVsOracle, "q llama3 table");
  testing::expect_close(d_k.to_host(), k, tol::kKernelVsOracle, "k llama3 table");
}

TEST_F(Rope, HandlesRowsWithoutKeyHeads) {
  check({3, 9, 40}, 3, 0, 16, 10000.0f, RopePairing::kAdjacentPairs);
}

TEST(RopeArgs, ZeroRowsLaunchNothing) {
  EXPECT_NO_THROW(launch_rope(nullptr, nullptr, nullptr, 0, 4, 2, 8, 10000.0f,
                              RopePairing::kRotateHalf, nullptr));
}

TEST(RopeArgs, RejectsBadArguments) {
  const auto rope = [](int rows, int n_heads, int n_kv_heads, int head_dim, float theta) {
    launch_rope(nullptr, nullptr, nullptr, rows, n_heads, n_kv_heads, head_dim, theta,
                RopePairing::kAdjacentPairs, nullptr);
  };
  EXPECT_THROW(rope(-1, 4, 2, 8, 1e4f), std::invalid_argument);
  EXPECT_THROW(rope(1, -4, 2, 8, 1e4f), std::invalid_argument);
  EXPECT_THROW(rope(1, 4, -2, 8, 1e4f), std::invalid_argument);
  EXPECT_THROW(rope(1, 4, 2, 7, 1e4f), std::invalid_argument);    // odd
  EXPECT_THROW(rope(1, 4, 2, 0, 1e4f), std::invalid_argument);
  EXPECT_THROW(rope(1, 4, 2, 258, 1e4f), std::invalid_argument);  // > kRopeMaxHeadDim
  EXPECT_THROW(rope(1, 4, 2, 8, 0.0f), std::invalid_argument);
  const float bad_table[2] = {1.0f, -0.5f};
  EXPECT_THROW(launch_rope(nullptr, nullptr, nullptr, 1, 1, 1, 4, bad_table,
                           RopePairing::kRotateHalf, nullptr),
               std::invalid_argument);
  EXPECT_THROW(launch_rope(nullptr, nullptr, nullptr, 1, 1, 1, 4, static_cast<const float*>(nullptr),
                           RopePairing::kRotateHalf, nullptr),
               std::invalid_argument);
}

}  // namespace
}  // namespace nanoserve
