// Synthetic models: published shapes, deterministic weights that are a pure function of
// (seed, tensor, index), and scales that keep logits informative.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>

#include "common/error.h"
#include "common/loaders/synthetic_model.h"

namespace nanoserve {
namespace {

TEST(SyntheticModel, PublishedShapesHaveThePublishedParameterCounts) {
  // Parameter counts published with the checkpoints (Hugging Face model cards / safetensors
  // index totals); Llama-2-7B is checked in test_model_config.cpp.
  EXPECT_EQ(synthetic_config("synthetic:llama2-7b").param_count(), 6738415616LL);
  EXPECT_EQ(synthetic_config("synthetic:llama2-13b").param_count(), 13015864320LL);
  EXPECT_EQ(synthetic_config("synthetic:llama2-70b").param_count(), 68976648192LL);
  EXPECT_EQ(synthetic_config("synthetic:llama3-8b").param_count(), 8030261248LL);
  EXPECT_EQ(synthetic_config("synthetic:llama3-70b").param_count(), 70553706496LL);
}

TEST(SyntheticModel, LlamaConfigsUseGqaAndRopeBaseAsPublished) {
  const ModelConfig l2 = synthetic_config("llama2-7b");  // the prefix is optional
  EXPECT_EQ(l2.n_kv_heads, 32);
  EXPECT_EQ(l2.head_dim, 128);
  EXPECT_EQ(l2.rope_theta, 1e4f);
  EXPECT_EQ(l2.vocab_size, 32000);
  const ModelConfig l70 = synthetic_config("synthetic:llama2-70b");
  EXPECT_EQ(l70.gqa_group(), 8);  // 64 query heads share 8 KV heads
  const ModelConfig l3 = synthetic_config("synthetic:llama3-8b");
  EXPECT_EQ(l3.n_kv_heads, 8);
  EXPECT_EQ(l3.hidden_dim, 14336);
  EXPECT_EQ(l3.vocab_size, 128256);
  EXPECT_EQ(l3.rope_theta, 5e5f);
  EXPECT_EQ(l3.max_seq_len, 8192);
  for (const std::string& name : synthetic_model_names()) {
    EXPECT_NO_THROW(synthetic_config(name).validate(name));
  }
}

TEST(SyntheticModel, TinyIsSmallWithGqa) {
  const ModelConfig c = synthetic_config("synthetic:tiny");
  EXPECT_EQ(c.dim, 64);
  EXPECT_EQ(c.n_layers, 4);
  EXPECT_EQ(c.n_heads, 8);
  EXPECT_EQ(c.n_kv_heads, 4);
  EXPECT_EQ(c.vocab_size, 512);
  EXPECT_EQ(c.max_seq_len, 256);
  EXPECT_LT(c.param_count(), 1000000);
}

TEST(SyntheticModel, UnknownNameListsTheKnownOnes) {
  try {
    synthetic_config("synthetic:llama9-1t");
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("llama9-1t"), std::string::npos) << what;
    EXPECT_NE(what.find("synthetic:tiny"), std::string::npos) << what;
    EXPECT_NE(what.find("synthetic:llama3-70b"), std::string::npos) << what;
  }
}

TEST(SyntheticModel, RefusesToMaterializeSevenBillionParametersOnTheHost) {
  const auto start = std::chrono::steady_clock::now();
  try {
    make_synthetic_model("synthetic:llama2-7b");
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("GPU"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(100));
  EXPECT_THROW(make_synthetic_model("synthetic:tiny", 1, /*max_bytes=*/1024), InvalidArgument);
}

TEST(SyntheticModel, WeightsAreAPureFunctionOfSeedTensorAndIndex) {
  const Model a = make_synthetic_model("synthetic:tiny", 42);
  const Model b = make_synthetic_model("synthetic:tiny", 42);
  const Model c = make_synthetic_model("synthetic:tiny", 43);
  EXPECT_EQ(a.layers[3].w2, b.layers[3].w2);
  EXPECT_EQ(a.classifier, b.classifier);
  EXPECT_NE(a.layers[3].w2, c.layers[3].w2);
  // The documented formula, re-derived here: element i of tensor t is word i%4 of
  // Philox(key = seed, counter = (i/4, 0, kWeights, t)), mapped to [-sqrt(3) std, sqrt(3) std).
  const ModelConfig& cfg = a.config;
  for (const uint64_t i : {uint64_t(0), uint64_t(5), uint64_t(4095)}) {
    const uint32_t t = 16 + 16 * 2 + 6;  // layer 2, w1 (slot 6)
    const Philox4x32 r = philox4x32_10({uint32_t(i / 4), 0, 5, t}, {42, 0});
    const double u = double(r[i % 4] >> 8) / 16777216.0;
    const double want = (2 * u - 1) * std::sqrt(3.0) / std::sqrt(double(cfg.dim));
    EXPECT_NEAR(a.layers[2].w1[i], want, 1e-7) << i;
  }
  // The bulk generator agrees with the per-element function everywhere, odd tails included.
  const std::vector<float>& wk = a.layers[1].wk;  // 32 x 64 elements
  for (uint64_t i = 0; i < wk.size(); ++i) {
    ASSERT_EQ(wk[i], synthetic_weight(42, synthetic_tensor_id(1, SyntheticLayerTensor::kWk), i,
                                      1 / std::sqrt(64.0f)))
        << i;
  }
  // Tensors are independent: the same index in two tensors differs.
  EXPECT_NE(a.layers[0].wq[0], a.layers[0].wk[0]);
}

/// Mean and standard deviation of a tensor.
std::pair<double, double> moments(const std::vector<float>& t) {
  double sum = 0, sq = 0;
  for (float x : t) sum += x;
  const double mean = sum / double(t.size());
  for (float x : t) sq += (x - mean) * (x - mean);
  return {mean, std::sqrt(sq / double(t.size()))};
}

TEST(SyntheticModel, ScalesFollowFanIn) {
  const Model m = make_synthetic_model("synthetic:small", 7);
  const ModelConfig& c = m.config;
  struct Case {
    const char* name;
    const std::vector<float>* t;
    double std;
  };
  const LayerWeights& w = m.layers[1];
  const Case cases[] = {
      {"embedding", &m.token_embedding, 1.0},
      {"wq", &w.wq, 1 / std::sqrt(double(c.dim))},
      {"wo", &w.wo, 1 / std::sqrt(double(c.q_dim()))},
      {"w2", &w.w2, 1 / std::sqrt(double(c.hidden_dim))},
      {"classifier", &m.classifier, 1 / std::sqrt(double(c.dim))},
  };
  for (const Case& k : cases) {
    const auto [mean, sd] = moments(*k.t);
    EXPECT_NEAR(sd, k.std, 0.02 * k.std) << k.name;
    EXPECT_NEAR(mean, 0.0, 0.02 * k.std) << k.name;
  }
  for (float g : w.attn_norm) ASSERT_EQ(g, 1.0f);
  for (float g : m.final_norm) ASSERT_EQ(g, 1.0f);
}

TEST(SyntheticModel, LogitsOfANormalizedHiddenStateAreNeitherFlatNorOneHot) {
  // The last step of a forward: logits = classifier * rmsnorm(h) (gains are 1). Take h as an
  // embedding row: unit RMS after the norm, so logits should have a std near 1.
  const Model m = make_synthetic_model("synthetic:tiny", 3);
  const ModelConfig& c = m.config;
  std::vector<double> h(m.token_embedding.begin() + 5 * c.dim,
                        m.token_embedding.begin() + 6 * c.dim);
  double ms = 0;
  for (double x : h) ms += x * x / c.dim;
  for (double& x : h) x /= std::sqrt(ms + c.norm_eps);
  std::vector<float> logits(c.vocab_size);
  for (int v = 0; v < c.vocab_size; ++v) {
    double dot = 0;
    for (int j = 0; j < c.dim; ++j) dot += m.classifier[size_t(v) * c.dim + j] * h[j];
    logits[v] = float(dot);
  }
  const auto [mean, sd] = moments(logits);
  EXPECT_GT(sd, 0.7);
  EXPECT_LT(sd, 1.4);
  // Softmax mass of the top token: far from uniform (1/512) and far from one-hot.
  double z = 0, top = -1e30;
  for (float l : logits) top = std::max(top, double(l));
  for (float l : logits) z += std::exp(l - top);
  EXPECT_GT(1 / z, 5.0 / c.vocab_size);
  EXPECT_LT(1 / z, 0.5);
}

TEST(SyntheticModel, CustomConfigsValidateAndTieOnRequest) {
  ModelConfig c = synthetic_config("synthetic:tiny");
  c.name = "custom";
  c.n_layers = 1;
  c.tied_classifier = true;
  const Model m = make_synthetic_model(c, 1);
  EXPECT_TRUE(m.classifier.empty());
  EXPECT_NO_THROW(m.validate());
  c.n_kv_heads = 3;
  EXPECT_THROW(make_synthetic_model(c, 1), LoadError);
}

}  // namespace
}  // namespace nanoserve
