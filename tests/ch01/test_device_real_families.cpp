// The device forward pass on the features of real checkpoints: Qwen2's q/k/v biases and
// Llama 3.1's llama3 (and linear) RoPE scaling, against the oracle on the same weights.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/engine/decode/naive_decoder.h"
#include "common/engine/model/device_model.h"
#include "common/engine/model/model_runner.h"
#include "common/engine/model/naive_kv_cache.h"
#include "common/loaders/synthetic_model.h"
#include "common/oracle/forward.h"
#include "common/tolerances.h"
#include "engine_test_support.h"
#include "family_model.h"
#include "test_support.h"

namespace nanoserve::engine {
namespace {

const RopeScaling kLlama3{RopeScalingType::kLlama3, 8.0f, 1.0f, 4.0f, 64};

std::vector<int> prompt() {
  std::vector<int> tokens;
  for (int i = 0; i < 20; ++i) tokens.push_back((37 * i + 3) % 80);
  return tokens;
}

/// All-position logits of the runner, prefilled in chunks of 7 rows (7, 7, 6).
std::vector<float> device_logits(const Model& m, DType dtype) {
  const DeviceModel device(m, dtype);
  ModelRunner runner(device, {7, 7});
  NaiveKVCache cache(m.config, DType::kF32, 32, 1);
  return kernel_logits(runner, cache)(prompt());
}

TEST(Ch01RealFamilies, Qwen2BiasesWithLlama3ScalingMatchTheOracle) {
  NANOSERVE_REQUIRE_DEVICE();
  const Model m = family_model(true, kLlama3);
  testing::expect_close(device_logits(m, DType::kF32), oracle::forward_prompt(m, prompt()),
                        tol::kFp32Forward, "qwen2 + llama3, fp32");
}

TEST(Ch01RealFamilies, Bf16BiasesAreTheRoundedValuesTheOracleSees) {
  NANOSERVE_REQUIRE_DEVICE();
  const Model m = family_model(true, {});
  testing::expect_close(device_logits(m, DType::kBF16),
                        oracle::forward_prompt(round_weights(m, DType::kBF16), prompt()),
                        tol::kKernelForwardBf16, "qwen2, bf16");
}

TEST(Ch01RealFamilies, LinearScalingMatchesTheOracle) {
  NANOSERVE_REQUIRE_DEVICE();
  const Model m = family_model(false, {RopeScalingType::kLinear, 4.0f});
  testing::expect_close(device_logits(m, DType::kF32), oracle::forward_prompt(m, prompt()),
                        tol::kFp32Forward, "llama + linear, fp32");
}

TEST(Ch01RealFamilies, BiasesAreUploadedAndCounted) {
  NANOSERVE_REQUIRE_DEVICE();
  const Model m = family_model(true, {});
  const DeviceModel biased(m, DType::kF32);
  EXPECT_EQ(biased.layer(1).bk.to_host_floats(), m.layers[1].bk);
  EXPECT_EQ(biased.weight_bytes(), m.config.param_count() * 4);
}

}  // namespace
}  // namespace nanoserve::engine
