// The forward pass with quantized weights through the normal engine (ModelRunner, NaiveDecoder):
// the kernels' logits match the CPU oracle run on the dequantized weights — for INT8 and INT4,
// per-group and per-channel, symmetric and asymmetric, with and without GPTQ's act-order — in
// a many-row prefill (the quantized GEMM) and one-row decode steps (the quantized GEMV); a
// reloaded NSQM file runs bit for bit like the model it was saved from; greedy decoding of a
// quantized stories260K through the kernels gives the oracle's tokens.
//
// synthetic:tiny is the main subject: its hidden width 176 = 5·32 + 16 sends w2 through the
// kernels' general path (odd widths, a narrow last group), its width 64 through the 16-byte
// chunk path.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/engine/decode/naive_decoder.h"
#include "common/engine/model/quantized_device_model.h"
#include "common/error.h"
#include "common/model_bundle.h"
#include "common/oracle/forward.h"
#include "common/oracle/oracle_decoder.h"
#include "common/quant/quant_io.h"
#include "common/quant/quantize_model.h"
#include "common/tolerances.h"
#include "quant_test_support.h"
#include "test_support.h"
#include "tests/ch01/engine_test_support.h"

namespace nanoserve::engine {
namespace {

using quant::QuantMethod;
using quant::QuantScheme;

struct ForwardCase {
  const char* name;
  QuantMethod method;
  QuantScheme scheme;
  bool act_order;
};

std::string case_name(const ::testing::TestParamInfo<ForwardCase>& info) { return info.param.name; }

/// synthetic:tiny quantized as `c` (GPTQ calibrated on random token sequences: the point here is
/// the format the kernels read, not the quality).
quant::QuantizedModel quantized_tiny(const ForwardCase& c) {
  const Model m = load_model_bundle("synthetic:tiny").model;
  quant::QuantizeOptions o;
  o.method = c.method;
  o.scheme = c.scheme;
  o.gptq.act_order = c.act_order;
  const auto calibration = testing::random_sequences(5, 4, 32, m.config.vocab_size);
  return quant::quantize_model(m, calibration, o);
}

std::vector<int> test_tokens(int n, int vocab) { return testing::random_sequences(9, 1, n, vocab)[0]; }

class Ch05QuantizedForward : public ::testing::TestWithParam<ForwardCase> {};

TEST_P(Ch05QuantizedForward, PrefillAndDecodeLogitsMatchTheOracleOnDequantizedWeights) {
  NANOSERVE_REQUIRE_DEVICE();
  const ForwardCase& c = GetParam();
  const quant::QuantizedModel q = quantized_tiny(c);
  if (c.act_order) {
    ASSERT_FALSE(q.layers[0][quant::LinearId::kW2].g_idx.empty());
  }
  const DeviceModel device = make_quantized_device_model(q, DType::kF32);
  ASSERT_EQ(device.layer(0).w2->format(), c.scheme.label() + (c.act_order ? "-act" : ""));
  // Stacked into one QKV and one gate+up layer, act-order included: wq, wk, wv (w1, w3) read
  // the same input, so GPTQ gives them the same Hessian and the same column order.
  for (int l = 0; l < q.base.config.n_layers; ++l) {
    ASSERT_TRUE(device.layer(l).wqkv && device.layer(l).w13) << "layer " << l;
    EXPECT_EQ(device.layer(l).wqkv->format(), device.layer(l).w2->format());
  }
  const Model reference = quantized_oracle_model(q, DType::kF32);
  const std::vector<int> tokens = test_tokens(24, q.base.config.vocab_size);

  // Prefill: all 24 rows in one pass (more than kQuantLinearGemvMaxRows: the quantized GEMM).
  ModelRunner runner(device, {24, 24});
  NaiveKVCache cache(q.base.config, DType::kF32, 32, 1);
  testing::expect_close(kernel_logits(runner, cache)(tokens), oracle::forward_prompt(reference, tokens),
                        tol::kQuantizedKernelForward, std::string(c.name) + " prefill, every row");

  // Decode: a 3-row prompt, then one row per step (the quantized GEMV at batch 3, then 1).
  const std::vector<int> decoded(tokens.begin(), tokens.begin() + 8);
  NaiveDecoder kernels(device, CacheMode::kNaiveCache, 32);
  oracle::OracleDecoder oracle(reference);
  const testing::StepLogits got = testing::replay(kernels, decoded, 3);
  const testing::StepLogits want = testing::replay(oracle, decoded, 3);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    testing::expect_close(got[i], want[i], tol::kQuantizedKernelForward,
                          std::string(c.name) + " decode step " + std::to_string(i));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Formats, Ch05QuantizedForward,
    ::testing::Values(ForwardCase{"Int8PerChannelRtn", QuantMethod::kRtn, {8, 0, true}, false},
                      ForwardCase{"Int8Group32AsymRtn", QuantMethod::kRtn, {8, 32, false}, false},
                      ForwardCase{"Int4Group32Rtn", QuantMethod::kRtn, {4, 32, true}, false},
                      ForwardCase{"Int4PerChannelAsymRtn", QuantMethod::kRtn, {4, 0, false}, false},
                      ForwardCase{"Int4Group64AsymGptqActOrder", QuantMethod::kGptq, {4, 64, false}, true},
                      ForwardCase{"Int8Group32GptqActOrder", QuantMethod::kGptq, {8, 32, true}, true}),
    case_name);

// fp16 for everything but the quantized linears (embedding, norms, classifier, KV cache): the
// oracle model rounds exactly those, and the fp16 KV cache is what the fp16 tolerance covers.
TEST(Ch05QuantizedForwardFp16, MatchesTheOracleWithTheRestRoundedToFp16) {
  NANOSERVE_REQUIRE_DEVICE();
  const quant::QuantizedModel q = quantized_tiny({"", QuantMethod::kRtn, {4, 32, true}, false});
  const DeviceModel device = make_quantized_device_model(q, DType::kF16);
  const Model reference = quantized_oracle_model(q, DType::kF16);
  const std::vector<int> tokens = test_tokens(8, q.base.config.vocab_size);
  NaiveDecoder kernels(device, CacheMode::kNaiveCache, 32);
  oracle::OracleDecoder oracle(reference);
  const testing::StepLogits got = testing::replay(kernels, tokens, 4);
  const testing::StepLogits want = testing::replay(oracle, tokens, 4);
  for (std::size_t i = 0; i < got.size(); ++i) {
    testing::expect_close(got[i], want[i], tol::kKernelForwardFp16, "step " + std::to_string(i));
  }
  EXPECT_EQ(device.weight_format(), "int4-g32-sym + fp16");
  EXPECT_NE(kernels.device_name().find("int4-g32-sym + fp16 weights"), std::string::npos)
      << kernels.device_name();
}

TEST(Ch05QuantizedDeviceModel, WeightBytesArePackedCodesAndScalesPlusTheRest) {
  NANOSERVE_REQUIRE_DEVICE();
  const quant::QuantizedModel q = quantized_tiny({"", QuantMethod::kRtn, {4, 32, true}, false});
  const ModelConfig& c = q.base.config;
  // By hand, from the format: a (rows, cols) INT4 linear is rows·ceil(cols/2) code bytes plus
  // one fp16 scale per (row, group of 32).
  auto linear = [](std::int64_t rows, std::int64_t cols) {
    return rows * ((cols + 1) / 2) + rows * ((cols + 31) / 32) * 2;
  };
  const std::int64_t per_layer = linear(c.q_dim(), c.dim) + 2 * linear(c.kv_dim(), c.dim) +
                                 linear(c.dim, c.q_dim()) + 2 * linear(c.hidden_dim, c.dim) +
                                 linear(c.dim, c.hidden_dim);
  const std::int64_t rest_floats =
      std::int64_t(c.vocab_size) * c.dim * (c.tied_classifier ? 1 : 2)  // embedding, classifier
      + c.dim                                                            // final norm
      + std::int64_t(c.n_layers) * 2 * c.dim;                           // block norms
  EXPECT_EQ(make_quantized_device_model(q, DType::kF32).weight_bytes(),
            c.n_layers * per_layer + 4 * rest_floats);
  EXPECT_EQ(make_quantized_device_model(q, DType::kBF16).weight_bytes(),
            c.n_layers * per_layer + 2 * rest_floats);
}

TEST(Ch05QuantizedDeviceModel, ASavedAndReloadedFileRunsBitForBitTheSame) {
  NANOSERVE_REQUIRE_DEVICE();
  const quant::QuantizedModel q =
      quantized_tiny({"", QuantMethod::kGptq, {4, 32, false}, /*act_order=*/true});
  const quant::QuantizedModel reloaded = quant::load_quantized_model(
      testing::write_temp_file("ch05_forward.nsqm", quant::serialize_quantized_model(q)));
  const DeviceModel a = make_quantized_device_model(q, DType::kF32);
  const DeviceModel b = make_quantized_device_model(reloaded, DType::kF32);
  const std::vector<int> tokens = test_tokens(20, q.base.config.vocab_size);
  NaiveDecoder ka(a, CacheMode::kNaiveCache, 32), kb(b, CacheMode::kNaiveCache, 32);
  EXPECT_EQ(testing::replay(ka, tokens, 18), testing::replay(kb, tokens, 18));  // GEMM, then GEMV
}

// Layers whose act-order differs cannot share one g_idx: they stay apart (and the runner applies
// them one by one), and the pass still matches the oracle; the other layers are stacked.
TEST(Ch05QuantizedDeviceModel, LayersOfDifferentActOrderStayApartAndStillMatchTheOracle) {
  NANOSERVE_REQUIRE_DEVICE();
  quant::QuantizedModel q =
      quantized_tiny({"", QuantMethod::kGptq, {4, 32, false}, /*act_order=*/true});
  for (quant::LinearId id : {quant::LinearId::kWk, quant::LinearId::kW3}) {
    std::vector<std::int32_t>& g = q.layers[1][id].g_idx;  // a valid but different order
    std::rotate(g.begin(), g.begin() + 1, g.end());
  }
  const DeviceModel device = make_quantized_device_model(q, DType::kF32);
  EXPECT_TRUE(device.layer(0).wqkv && device.layer(0).w13);
  const DeviceLayer& apart = device.layer(1);
  EXPECT_FALSE(apart.wqkv || apart.w13);
  EXPECT_TRUE(apart.wq && apart.wk && apart.wv && apart.w1 && apart.w3);
  const std::vector<int> tokens = test_tokens(24, q.base.config.vocab_size);
  for (int chunk : {6, 24}) {  // GEMV, then GEMM rows
    ModelRunner runner(device, {chunk, chunk});
    NaiveKVCache cache(q.base.config, DType::kF32, 32, 1);
    testing::expect_close(kernel_logits(runner, cache)(tokens),
                          oracle::forward_prompt(quantized_oracle_model(q, DType::kF32), tokens),
                          tol::kQuantizedKernelForward, "chunks of " + std::to_string(chunk));
  }
}

TEST(Ch05QuantizedDeviceModel, RefusesACorruptModelBeforeUploading) {
  NANOSERVE_REQUIRE_DEVICE();
  quant::QuantizedModel q = quantized_tiny({"", QuantMethod::kRtn, {8, 64, true}, false});
  q.layers[1][quant::LinearId::kWo].scales.pop_back();
  try {
    (void)make_quantized_device_model(q, DType::kF32);
    FAIL() << "a short scales array was accepted";
  } catch (const LoadError& e) {
    EXPECT_NE(std::string(e.what()).find("layers.1.wo.scales"), std::string::npos) << e.what();
  }
}

TEST(Ch05QuantizedDeviceModel, AFactoryLinearOfTheWrongShapeIsRefused) {
  NANOSERVE_REQUIRE_DEVICE();
  const quant::QuantizedModel q = quantized_tiny({"", QuantMethod::kRtn, {8, 0, true}, false});
  const quant::QuantizedLinear& wk = q.layers[0][quant::LinearId::kWk];  // (kv_dim, dim)
  EXPECT_THROW(DeviceModel(q.base, DType::kF32,
                           [&wk](int, const std::string&, int, int) {
                             return std::make_unique<QuantizedDeviceLinear>(wk);
                           }),
               InvalidArgument);  // wq is (q_dim, dim): q_dim != kv_dim under GQA
}

// A real model end to end: greedy decoding of INT4 (RTN, groups of 32) stories260K through the
// kernels produces the oracle's tokens on the same dequantized weights. Its hidden width
// 172 = 5·32 + 12 sends w2 through the kernels' general path.
TEST(Ch05QuantizedGeneration, Stories260KGreedyTokensMatchTheOracle) {
  NANOSERVE_REQUIRE_DEVICE();
  NANOSERVE_REQUIRE_DATA(path, "stories260K.bin");
  const ModelBundle b = load_model_bundle(path);
  quant::QuantizeOptions o;
  o.scheme = {4, 32, true};
  const quant::QuantizedModel q = quant::quantize_model(b.model, {}, o);
  const DeviceModel device = make_quantized_device_model(q, DType::kF32);
  const Model reference = quantized_oracle_model(q, DType::kF32);
  GenerateOptions opt;
  opt.max_new_tokens = 16;
  opt.sampling.temperature = 0.0f;
  const std::vector<int> prompt = b.tokenizer->encode("Once upon a time", true, false);
  NaiveDecoder kernels(device, CacheMode::kNaiveCache);
  oracle::OracleDecoder oracle(reference);
  const GenerateResult got = generate(kernels, prompt, opt);
  const GenerateResult want = generate(oracle, prompt, opt);
  EXPECT_EQ(got.tokens, want.tokens) << "kernels: " << b.tokenizer->decode(got.tokens)
                                     << "\noracle:  " << b.tokenizer->decode(want.tokens);
  EXPECT_EQ(got.generated(), 16);
}

}  // namespace
}  // namespace nanoserve::engine
