// GGUF files quantized by llama.cpp itself (tests/data/gguf_llama_cpp/: a 1-layer Llama with
// 256-wide rows, quantized by `llama_model_quantize`) on the device with their Q8_0 / Q4_0 /
// Q4_K / Q6_K linears kept packed: the kernels' logits match the CPU oracle run on the decoded
// file, in a many-row prefill (dequantize + GEMM) and in one-row decode steps (the GEMV
// decoding blocks in registers); the packed layers are what the model's device bytes say;
// Q4_K_M's mix keeps both its Q4_K and its Q6_K layers (attn_v, ffn_down) packed.
#include <gtest/gtest.h>

#include <cctype>
#include <string>
#include <vector>

#include "common/engine/decode/naive_decoder.h"
#include "common/engine/model/gguf_device_model.h"
#include "common/error.h"
#include "common/loaders/gguf_quant_blocks.h"
#include "common/oracle/forward.h"
#include "common/oracle/oracle_decoder.h"
#include "common/tolerances.h"
#include "quant_test_support.h"
#include "test_support.h"
#include "tests/ch01/engine_test_support.h"

namespace nanoserve::engine {
namespace {

const std::string kDir = std::string(NANOSERVE_TEST_DATA_DIR) + "/gguf_llama_cpp/";

std::vector<int> tokens(int n, int vocab) { return testing::random_sequences(21, 1, n, vocab)[0]; }

class Ch05GgufDeviceModel : public ::testing::TestWithParam<const char*> {};

TEST_P(Ch05GgufDeviceModel, PackedLinearsMatchTheOracleOnTheDecodedFile) {
  NANOSERVE_REQUIRE_DEVICE();
  const GgufCheckpointReader reader(kDir + "synthetic-" + GetParam() + ".gguf");
  const ModelConfig& c = reader.config();
  const DeviceModel packed = make_gguf_device_model(reader, DType::kF32);
  const DeviceModel dense = make_gguf_device_model(reader, DType::kF32, /*keep_packed=*/false);
  const std::string type = GetParam();
  // The formats its layers must be kept in: Q4_K_M mixes Q4_K with Q6_K (attn_v, ffn_down).
  std::vector<std::string> want;
  if (type == "Q4_K_M") {
    want = {"gguf-q4_k", "gguf-q6_k"};
  } else {
    std::string lower = type;
    for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    want = {"gguf-" + lower};
  }
  for (const std::string& format : want) {
    int packed_layers = 0;
    for (int l = 0; l < c.n_layers; ++l) {
      for (const DeviceLinear* lin : packed.layer(l).linears()) {
        packed_layers += lin->format() == format;
      }
    }
    EXPECT_GE(packed_layers, 2) << "fewer than two " << format << " layers were kept packed";
  }
  EXPECT_LT(packed.weight_bytes(), dense.weight_bytes());

  const Model reference = gguf_oracle_model(reader, DType::kF32);
  const std::vector<int> prompt = tokens(24, c.vocab_size);
  {  // Prefill: 24 rows, more than kGgufLinearGemvMaxRows: dequantize into the scratch + GEMM.
    ModelRunner runner(packed, {24, 24});
    NaiveKVCache cache(c, DType::kF32, 32, 1);
    testing::expect_close(kernel_logits(runner, cache)(prompt),
                          oracle::forward_prompt(reference, prompt), tol::kQuantizedKernelForward,
                          type + " prefill, every row");
  }
  // Decode: a 3-row prompt, then one row per step (the GEMV at batch 3, then 1).
  const std::vector<int> decoded(prompt.begin(), prompt.begin() + 8);
  NaiveDecoder kernels(packed, CacheMode::kNaiveCache, 32);
  oracle::OracleDecoder oracle(reference);
  const testing::StepLogits got = testing::replay(kernels, decoded, 3);
  const testing::StepLogits want_logits = testing::replay(oracle, decoded, 3);
  ASSERT_EQ(got.size(), want_logits.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    testing::expect_close(got[i], want_logits[i], tol::kQuantizedKernelForward,
                          type + " decode step " + std::to_string(i));
  }
}

INSTANTIATE_TEST_SUITE_P(LlamaCppFiles, Ch05GgufDeviceModel,
                         ::testing::Values("Q8_0", "Q4_0", "Q6_K", "Q4_K_M"));

// bf16 activations and storage for everything that is not packed: the GEMV path multiplies the
// exact block values with bf16 activations; compared as every bf16 forward is.
TEST(Ch05GgufDeviceModelBf16, DecodeMatchesTheOracleWithTheRestRoundedToBf16) {
  NANOSERVE_REQUIRE_DEVICE();
  const GgufCheckpointReader reader(kDir + "synthetic-Q4_K_M.gguf");
  const DeviceModel device = make_gguf_device_model(reader, DType::kBF16);
  const Model reference = gguf_oracle_model(reader, DType::kBF16);
  const std::vector<int> t = tokens(8, reader.config().vocab_size);
  NaiveDecoder kernels(device, CacheMode::kNaiveCache, 32);
  oracle::OracleDecoder oracle(reference);
  const testing::StepLogits got = testing::replay(kernels, t, 4);
  const testing::StepLogits want = testing::replay(oracle, t, 4);
  for (std::size_t i = 0; i < got.size(); ++i) {
    testing::expect_close(got[i], want[i], tol::kKernelForwardBf16, "step " + std::to_string(i));
  }
  EXPECT_NE(device.weight_format().find("gguf-q4_k"), std::string::npos) << device.weight_format();
}

TEST(Ch05GgufDeviceLinear, StacksBlocksOfOneTypeAndRefusesMixedOnes) {
  NANOSERVE_REQUIRE_DEVICE();
  //! [GgufDeviceLinear]
  // Two Q8_0 weights (3 rows of 64 columns, 4 rows of 64) uploaded as stored, then stacked.
  std::vector<float> a(3 * 64), b(4 * 64);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = float(int(i % 7) - 3) * 0.25f;
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = float(int(i % 5) - 2) * 0.5f;
  const std::vector<std::uint8_t> qa = encode_q8_0(a), qb = encode_q8_0(b);
  const GgufDeviceLinear wa(GgufBlockType::kQ8_0, 3, 64, qa.data(), nullptr);
  const GgufDeviceLinear wb(GgufBlockType::kQ8_0, 4, 64, qb.data(), nullptr);
  EXPECT_EQ(wa.format(), "gguf-q8_0");
  EXPECT_EQ(wa.own_bytes(), 3 * 2 * 34);  // two 34-byte blocks per row
  const std::unique_ptr<DeviceLinear> ab = wa.stacked_with({&wb});
  ASSERT_NE(ab, nullptr);
  EXPECT_EQ(ab->out_features(), 7);
  //! [GgufDeviceLinear]
  std::vector<float> x(64, 1.0f), y(7, 0.0f);
  DeviceBuffer<float> dx(x), dy(y);
  ab->apply(dx.get(), dy.get(), 1, nullptr, Epilogue::kStore);  // one row: the GEMV
  y = dy.to_host();
  // The weights the kernel multiplies are ggml's decoded values (not a and b: Q8_0 rounds them).
  std::vector<float> da(a.size()), db(b.size());
  decode_q8_0(qa.data(), da.size(), da.data());
  decode_q8_0(qb.data(), db.size(), db.data());
  for (int r = 0; r < 7; ++r) {
    const float* w = r < 3 ? &da[std::size_t(r) * 64] : &db[std::size_t(r - 3) * 64];
    double sum = 0;
    for (int k = 0; k < 64; ++k) sum += w[k];
    EXPECT_NEAR(y[std::size_t(r)], sum, 1e-5) << "row " << r;
  }
  const std::vector<std::uint8_t> q4 = encode_q4_0(b);
  const GgufDeviceLinear w4(GgufBlockType::kQ4_0, 4, 64, q4.data(), nullptr);
  EXPECT_EQ(wa.stacked_with({&w4}), nullptr);
  // A GGUF linear writes its activation type; fp32 logits come from the (dense) classifier.
  EXPECT_THROW(ab->apply(dx.get(), DType::kBF16, dy.get(), DType::kF32, 1, nullptr,
                         Epilogue::kStore),
               InvalidArgument);
  EXPECT_THROW(GgufDeviceLinear(GgufBlockType::kQ4_K, 1, 64, qa.data(), nullptr), InvalidArgument);
  // More rows than the GEMV takes and no scratch for the GEMM path: a clear error.
  const int many = kGgufLinearGemvMaxRows + 1;
  std::vector<float> xm(std::size_t(many) * 64, 1.0f);
  DeviceBuffer<float> dxm(xm), dym(std::size_t(many) * 7);
  EXPECT_THROW(ab->apply(dxm.get(), dym.get(), many, nullptr, Epilogue::kStore),
               std::invalid_argument);
}

}  // namespace
}  // namespace nanoserve::engine
