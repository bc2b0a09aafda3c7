// Quantization quality on the two real models (stories260K, TinyStories-656K), judged on what
// is robust at this size: GPTQ beats RTN in perplexity at 4 bits; GPTQ and AWQ beat RTN in
// mean KL and layer output error; INT8 per-channel stays within 0.5% of fp32 perplexity.
//
// Data: calibration on documents 80..99 of the text sample (calibration.h), evaluation on
// documents 0..19 and KL on documents 0..9 (each cut to 256 tokens) — subsets of the
// evaluation slice 0..79, for speed. The 4-bit scheme is INT4 g128 symmetric, the usual
// GPTQ/AWQ setting, chosen before measuring. Perplexity differences below ~1% are noise here.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <memory>
#include <string>

#include "common/eval/perplexity.h"
#include "common/model_bundle.h"
#include "common/oracle/forward.h"
#include "common/quant/calibration.h"
#include "common/quant/quant_metrics.h"
#include "common/quant/quantize_model.h"
#include "common/quant/rtn.h"
#include "common/tolerances.h"
#include "test_support.h"

namespace nanoserve::quant {
namespace {

const QuantScheme kInt4{4, 128, true};
/// Perplexity differences below ~1% are noise on these models and slices (measured: INT8 RTN
/// came out 0.02% *below* fp32 on TinyStories-656K), so "beats" means by more than that.
constexpr double kPerplexityNoise = 0.01;
/// The bound for INT8 per-channel: within 0.5% of fp32 perplexity.
constexpr double kInt8PerplexityBound = 0.005;

/// One real model with its data, quantized lazily once per test binary.
struct RealModel {
  ModelBundle bundle;
  std::vector<std::vector<int>> calibration;  // documents 80..99
  std::string text;                           // the whole text sample
  std::vector<std::vector<int>> kl_sequences;  // documents 0..9
  std::vector<BlockStats> stats;              // the fp32 model's inputs on `calibration`
  double fp_perplexity = 0;                    // documents 0..19, computed on first use

  double perplexity(const Model& m) const {
    return evaluate_documents(m, *bundle.tokenizer, text, {0, 20}).perplexity;
  }
  double reference_perplexity() {
    if (fp_perplexity == 0) fp_perplexity = perplexity(bundle.model);
    return fp_perplexity;
  }
  // Computed on first use: a calibration pass the INT8 test does not need (each test runs in
  // its own process under ctest, so nothing is shared between tests there).
  const std::vector<BlockStats>& fp_stats() {
    if (stats.empty()) stats = collect_block_stats(bundle.model, calibration, 0, bundle.model.config.n_layers - 1);
    return stats;
  }
};

/// The model `name` with its data, or nullptr when the data files are absent.
RealModel* real_model(const std::string& name) {
  static std::map<std::string, std::unique_ptr<RealModel>> cache;
  if (!testing::data_file(name) || !testing::data_file("tinystories_valid_sample.txt")) return nullptr;
  auto& slot = cache[name];
  if (!slot) {
    slot = std::make_unique<RealModel>();
    RealModel& r = *slot;
    r.bundle = load_model_bundle(name);
    const std::string text = eval::read_text_file(*testing::data_file("tinystories_valid_sample.txt"));
    r.calibration = calibration_sequences(select_documents(text, kCalibrationDocuments), *r.bundle.tokenizer);
    r.text = text;
    r.kl_sequences = calibration_sequences(select_documents(text, {0, 10}), *r.bundle.tokenizer);
  }
  return slot.get();
}

class Ch05Quality : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    model_ = real_model(GetParam());
    if (model_ == nullptr) {
      GTEST_SKIP() << "real data for '" << GetParam() << "' not found; set NANOSERVE_DATA=../shared/data";
    }
  }
  RealModel* model_ = nullptr;
};

TEST_P(Ch05Quality, GptqLowersEveryRealLayersOutputErrorBelowRtn) {
  const Model& m = model_->bundle.model;
  for (int l = 0; l < m.config.n_layers; ++l) {
    for (LinearId id : kLinearIds) {
      const std::vector<float>& w = linear_weights(m.layers[size_t(l)], id);
      const int rows = linear_rows(m.config, id), cols = linear_cols(m.config, id);
      const InputStats& x = model_->fp_stats()[size_t(l)][linear_input(id)];
      const std::vector<float> g = gptq_quantize(w.data(), rows, cols, x.hessian(), kInt4).weight.dequantize();
      const std::vector<float> r = fake_quantize_rtn(w.data(), rows, cols, kInt4);
      EXPECT_LT(output_error(w.data(), g.data(), rows, x.gram), output_error(w.data(), r.data(), rows, x.gram))
          << "layer " << l << " " << to_string(id);
    }
  }
}

TEST_P(Ch05Quality, FoldingAwqScalesLeavesTheFp32LogitsUnchanged) {
  Model t = model_->bundle.model;
  AwqOptions o;
  o.clip = false;  // clipping changes the weights on purpose; scaling alone must not
  for (int l = 0; l < t.config.n_layers; ++l) {
    awq_transform_layer(t, l, model_->fp_stats()[size_t(l)], kInt4, o);
  }
  EXPECT_NE(t.layers[0].attn_norm, model_->bundle.model.layers[0].attn_norm);
  const std::vector<int>& tokens = model_->kl_sequences[0];
  const CloseResult r = allclose(oracle::forward_prompt(t, tokens),
                                 oracle::forward_prompt(model_->bundle.model, tokens), tol::kFp32Forward);
  EXPECT_TRUE(r.ok) << r.summary();
}

TEST_P(Ch05Quality, Int8PerChannelStaysWithinHalfAPercentOfFp32Perplexity) {
  QuantizeOptions o;
  o.scheme = {8, 0, true};
  const QuantizedModel q = quantize_model(model_->bundle.model, {}, o);
  const double ppl = model_->perplexity(q.dequantize()), fp = model_->reference_perplexity();
  EXPECT_NEAR(ppl / fp, 1.0, kInt8PerplexityBound) << "fp32 " << fp << ", int8 " << ppl;
}

TEST_P(Ch05Quality, Int4GptqAndAwqBeatRtn) {
  // One test for the three metrics so the three quantizations run once per process (ctest
  // runs every test in its own process).
  const Model& fp = model_->bundle.model;
  double ppl[3], kl[3], err[3];
  for (QuantMethod m : {QuantMethod::kRtn, QuantMethod::kGptq, QuantMethod::kAwq}) {
    QuantizeOptions o;
    o.method = m;
    o.scheme = kInt4;
    QuantizeReport report;
    const Model dq = quantize_model(fp, model_->calibration, o, &report).dequantize();
    ppl[int(m)] = model_->perplexity(dq);
    kl[int(m)] = mean_kl_divergence(fp, dq, model_->kl_sequences);
    err[int(m)] = mean_relative_error(
        layer_output_errors(fp, dq, model_->fp_stats(), m == QuantMethod::kAwq ? &report.awq : nullptr));
  }
  std::printf("[ measured ] %s %s: perplexity rtn %.4f gptq %.4f awq %.4f; KL rtn %.5f gptq %.5f "
              "awq %.5f; layer error rtn %.5f gptq %.5f awq %.5f\n",
              GetParam(), kInt4.label().c_str(), ppl[0], ppl[1], ppl[2], kl[0], kl[1], kl[2],
              err[0], err[1], err[2]);
  constexpr int kRtn = int(QuantMethod::kRtn), kGptq = int(QuantMethod::kGptq), kAwq = int(QuantMethod::kAwq);
  EXPECT_LT(ppl[kGptq], (1 - kPerplexityNoise) * ppl[kRtn]) << "GPTQ should beat RTN by more than the ~1% noise";
  // AWQ's perplexity is reported, not asserted (see awq.h and the chapter's tutorial).
  EXPECT_LT(kl[kGptq], kl[kRtn]);
  EXPECT_LT(kl[kAwq], kl[kRtn]);
  EXPECT_LT(err[kGptq], err[kRtn]);
  EXPECT_LT(err[kAwq], err[kRtn]);
}

INSTANTIATE_TEST_SUITE_P(RealModels, Ch05Quality,
                         ::testing::Values("stories260K.bin", "tinystories-656k"),
                         [](const ::testing::TestParamInfo<const char*>& param) {
                           return std::string(param.index == 0 ? "Stories260K" : "TinyStories656K");
                         });

}  // namespace
}  // namespace nanoserve::quant
