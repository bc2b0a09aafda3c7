// DeviceModel: what reaches the device is exactly the host weights in the storage type.
#include <gtest/gtest.h>

#include <cmath>

#include "common/engine/model/device_model.h"
#include "common/error.h"
#include "common/model_bundle.h"
#include "engine_test_support.h"
#include "test_support.h"

namespace nanoserve::engine {
namespace {

std::vector<float> stacked(const std::vector<const std::vector<float>*>& parts) {
  std::vector<float> all;
  for (const std::vector<float>* p : parts) all.insert(all.end(), p->begin(), p->end());
  return all;
}

TEST(Ch01DeviceModel, Fp32WeightsArriveBitForBit) {
  NANOSERVE_REQUIRE_DEVICE();
  const Model m = load_model_bundle("synthetic:tiny").model;
  const DeviceModel d(m, DType::kF32);
  EXPECT_EQ(d.layer(3).w2->tensors().front()->to_host_floats(), m.layers[3].w2);
  EXPECT_EQ(d.final_norm().to_host_floats(), m.final_norm);
  EXPECT_EQ(d.token_embedding().to_host_floats(), m.token_embedding);
}

TEST(Ch01DeviceModel, Fp16WeightsAreTheHostWeightsRoundedOnce) {
  NANOSERVE_REQUIRE_DEVICE();
  const Model m = load_model_bundle("synthetic:tiny").model;
  const DeviceModel d(m, DType::kF16);
  const Model rounded = round_weights(m, DType::kF16);
  const std::vector<float> got = d.layer(1).wo->tensors().front()->to_host_floats();
  EXPECT_EQ(got, rounded.layers[1].wo);
  // Rounding to nearest fp16 moves a value by at most half an ulp: 2^-11 relative.
  int changed = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const float want = m.layers[1].wo[i];
    EXPECT_LE(std::fabs(got[i] - want), std::ldexp(std::fabs(want), -11)) << i;
    changed += got[i] != want;
  }
  EXPECT_GT(changed, 0);  // the weights really were rounded
  EXPECT_EQ(d.layer(1).attn_norm.dtype(), DType::kF16);  // the norms too
}

// The projections that share an input arrive as one matrix each, rows in order: [Wq; Wk; Wv]
// and [W1; W3] (what the fused QKV and gate+up launches read), the parts dropped.
TEST(Ch01DeviceModel, SharedInputProjectionsAreStackedRowWise) {
  NANOSERVE_REQUIRE_DEVICE();
  const Model m = load_model_bundle("synthetic:tiny").model;
  const ModelConfig& c = m.config;
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    const DeviceModel d(m, dtype);
    const Model rounded = round_weights(m, dtype);
    for (int l = 0; l < c.n_layers; ++l) {
      const DeviceLayer& w = d.layer(l);
      const LayerWeights& r = rounded.layers[std::size_t(l)];
      ASSERT_TRUE(w.wqkv && w.w13);
      EXPECT_FALSE(w.wq || w.wk || w.wv || w.w1 || w.w3);
      EXPECT_EQ(w.wqkv->out_features(), c.q_dim() + 2 * c.kv_dim());
      EXPECT_EQ(w.w13->out_features(), 2 * c.hidden_dim);
      EXPECT_EQ(w.wqkv->tensors().front()->to_host_floats(), stacked({&r.wq, &r.wk, &r.wv}));
      EXPECT_EQ(w.w13->tensors().front()->to_host_floats(), stacked({&r.w1, &r.w3}));
      EXPECT_EQ(w.linears().size(), 4u);  // wqkv, wo, w13, w2
    }
  }
}

TEST(Ch01DeviceModel, WeightBytesCountEveryTensorOnce) {
  NANOSERVE_REQUIRE_DEVICE();
  // synthetic:tiny by hand: embedding 512·64 = 32768; per layer 2·64 norms + wq 64·64 +
  // wk, wv 32·64 each + wo 64·64 + w1, w2, w3 3·176·64 = 46208, × 4 layers = 184832;
  // final norm 64; untied classifier 32768 — 250432 weights.
  const Model m = load_model_bundle("synthetic:tiny").model;
  EXPECT_EQ(DeviceModel(m, DType::kF32).weight_bytes(), 250432 * 4);
  EXPECT_EQ(DeviceModel(m, DType::kBF16).weight_bytes(), 250432 * 2);
}

TEST(Ch01DeviceModel, ATiedClassifierSharesTheEmbeddingMemory) {
  NANOSERVE_REQUIRE_DEVICE();
  NANOSERVE_REQUIRE_DATA(path, "stories260K.bin");
  // stories260K (data README): embedding 512·64 = 32768; per layer 128 + 4096 + 2·2048 + 4096 +
  // 3·172·64 = 45440, × 5 = 227200; final norm 64; tied classifier — 260032 weights ("260K").
  const Model m = load_model_bundle(path).model;
  const DeviceModel d(m, DType::kF16);
  EXPECT_EQ(d.weight_bytes(), 260032 * 2);
  EXPECT_EQ(d.classifier().tensors().front()->storage_id(), d.token_embedding().storage_id());
}

TEST(Ch01DeviceModel, RefusesToReadATensorAsTheWrongType) {
  NANOSERVE_REQUIRE_DEVICE();
  const DeviceTensor t(std::vector<float>{1.0f, 2.0f}, DType::kF16);
  EXPECT_NE(t.data<__half>(), nullptr);
  EXPECT_THROW(t.data<float>(), InvalidArgument);
}

}  // namespace
}  // namespace nanoserve::engine
