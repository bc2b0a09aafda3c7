// The device forward pass on the features of real checkpoints: Qwen2's q/k/v biases and
// Llama 3.1's llama3 (and linear) RoPE scaling, against the oracle on the same weights.
#include <gtest/gtest.h>

#include <random>
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
#include "test_support.h"

namespace nanoserve::engine {
namespace {

/// A random 2-layer GQA model; with `biases`, Qwen2's q/k/v biases (seeded uniform values).
Model family_model(bool biases, RopeScaling scaling) {
  ModelConfig c;
  c.name = biases ? "qwen2-like" : "llama3-like";
  c.architecture = biases ? "qwen2" : "llama";
  c.dim = 64, c.hidden_dim = 96, c.n_layers = 2, c.n_heads = 4, c.n_kv_heads = 2;
  c.head_dim = 16, c.vocab_size = 80, c.max_seq_len = 64;
  c.rope_theta = biases ? 1e6f : 500000.0f;
  c.rope_style = RopeStyle::kRotateHalf;
  c.rope_scaling = scaling;
  c.tied_classifier = biases;
  Model m = make_synthetic_model(c, 11);
  m.config.attention_bias = biases;
  if (biases) {
    std::mt19937_64 rng(5);
    std::uniform_real_distribution<float> u(-0.5f, 0.5f);
    auto draw = [&](int n) {
      std::vector<float> v(static_cast<std::size_t>(n));
      for (float& x : v) x = u(rng);
      return v;
    };
    for (LayerWeights& w : m.layers) {
      w.bq = draw(c.q_dim());
      w.bk = draw(c.kv_dim());
      w.bv = draw(c.kv_dim());
    }
  }
  m.validate();
  return m;
}

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
