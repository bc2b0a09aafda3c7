// The fused forward pass — one QKV projection over [Wq; Wk; Wv], gate+up over [W1; W3] with the
// SwiGLU epilogue, RoPE fused with the KV append — against the same model whose linears refuse
// to be stacked (DeviceLinear::stacked_with gives null, as for a factory's layers of mixed
// formats), which the runner then applies one by one: in fp32 the logits are the same bits, on
// the GEMV side (7-row chunks) and on the GEMM side (one 20-row chunk), with and without
// Qwen2's biases; in bf16 both stay within the forward tolerance of the oracle.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/engine/decode/naive_decoder.h"
#include "common/engine/model/device_model.h"
#include "common/engine/model/model_runner.h"
#include "common/engine/model/naive_kv_cache.h"
#include "common/model_bundle.h"
#include "common/oracle/forward.h"
#include "common/tolerances.h"
#include "engine_test_support.h"
#include "family_model.h"
#include "test_support.h"

namespace nanoserve::engine {
namespace {

// A dense linear that cannot be stacked with another (the default `stacked_with`).
class UnstackableLinear final : public DeviceLinear {
 public:
  UnstackableLinear(DeviceTensor w, int out, int in) : inner_(std::move(w), out, in) {}
  using DeviceLinear::apply;
  void apply(const void* x, DType x_type, void* y, DType y_type, int rows, cudaStream_t stream,
             Epilogue epilogue) const override {
    inner_.apply(x, x_type, y, y_type, rows, stream, epilogue);
  }
  int out_features() const override { return inner_.out_features(); }
  int in_features() const override { return inner_.in_features(); }
  std::vector<const DeviceTensor*> tensors() const override { return inner_.tensors(); }
  std::string format() const override { return inner_.format(); }

 private:
  DenseLinear inner_;
};

const std::vector<float>& host_linear(const LayerWeights& w, const std::string& name) {
  if (name == "wq") return w.wq;
  if (name == "wk") return w.wk;
  if (name == "wv") return w.wv;
  if (name == "wo") return w.wo;
  if (name == "w1") return w.w1;
  if (name == "w2") return w.w2;
  return w.w3;
}

// `m` on the device with every block linear apart (the runner's unstacked path).
DeviceModel unstacked(const Model& m, DType dtype) {
  return DeviceModel(m, dtype, [&m, dtype](int l, const std::string& name, int out, int in) {
    return std::make_unique<UnstackableLinear>(
        DeviceTensor(host_linear(m.layers[std::size_t(l)], name), dtype), out, in);
  });
}

std::vector<int> prompt(int vocab) {
  std::vector<int> tokens;
  for (int i = 0; i < 20; ++i) tokens.push_back((37 * i + 3) % vocab);
  return tokens;
}

// All-position logits of `device` in fp32/`dtype` activations, prefilled in chunks of `chunk`.
std::vector<float> logits(const DeviceModel& device, int chunk) {
  ModelRunner runner(device, {chunk, chunk});
  NaiveKVCache cache(device.config(), device.dtype(), 32, 1);
  return kernel_logits(runner, cache)(prompt(device.config().vocab_size));
}

std::vector<Model> subjects() {
  return {load_model_bundle("synthetic:tiny").model, family_model(true, {})};
}

TEST(Ch01FusedForward, AnUnstackableFactoryKeepsTheLinearsApart) {
  NANOSERVE_REQUIRE_DEVICE();
  const Model m = load_model_bundle("synthetic:tiny").model;
  const DeviceModel apart = unstacked(m, DType::kF32);
  const DeviceLayer& w = apart.layer(0);
  EXPECT_FALSE(w.wqkv || w.w13);
  EXPECT_TRUE(w.wq && w.wk && w.wv && w.w1 && w.w3);
  EXPECT_EQ(w.linears().size(), 7u);
  EXPECT_EQ(apart.weight_bytes(), DeviceModel(m, DType::kF32).weight_bytes());
  // The separate path needs W3 x beside W1 x: one (Tmax, hidden) buffer more.
  const std::int64_t extra = std::int64_t(4) * m.config.hidden_dim * 4;
  EXPECT_EQ(ModelRunner(apart, {4, 1}).activation_bytes(),
            ModelRunner(DeviceModel(m, DType::kF32), {4, 1}).activation_bytes() + extra);
}

TEST(Ch01FusedForward, Fp32LogitsAreTheBitsOfTheUnstackedPass) {
  NANOSERVE_REQUIRE_DEVICE();
  for (const Model& m : subjects()) {
    const DeviceModel fused(m, DType::kF32);
    const DeviceModel apart = unstacked(m, DType::kF32);
    const std::vector<float> want = oracle::forward_prompt(m, prompt(m.config.vocab_size));
    for (int chunk : {7, 24}) {  // GEMV rows (7, 7, 6), then GEMM rows (20)
      const std::vector<float> a = logits(fused, chunk), b = logits(apart, chunk);
      EXPECT_EQ(a, b) << m.config.name << ", chunks of " << chunk;
      testing::expect_close(a, want, tol::kFp32Forward, m.config.name + " vs the oracle");
    }
  }
}

// In bf16 the fused pass rounds less (gate and up, and the rotated keys, are never stored in
// bf16), so it is not the unstacked pass's bits — both must be within the forward tolerance of
// the oracle on the same rounded weights. One 20-row chunk: the tensor-core GEMMs and their
// SwiGLU epilogue (the GEMV side of the fused bf16 pass is every decode step of
// test_runner_activation_dtype.cpp).
TEST(Ch01FusedForward, Bf16FusedAndUnstackedPassesBothMatchTheOracle) {
  NANOSERVE_REQUIRE_DEVICE();
  for (const Model& m : subjects()) {
    const std::vector<float> want =
        oracle::forward_prompt(round_weights(m, DType::kBF16), prompt(m.config.vocab_size));
    testing::expect_close(logits(DeviceModel(m, DType::kBF16), 24), want,
                          tol::kKernelForwardActBf16, "fused " + m.config.name);
    testing::expect_close(logits(unstacked(m, DType::kBF16), 24), want,
                          tol::kKernelForwardActBf16, "unstacked " + m.config.name);
  }
}

}  // namespace
}  // namespace nanoserve::engine
