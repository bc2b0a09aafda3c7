// Quantized weights in the same engine (chapter 7): `--quant` quantizes at load (RTN, GPTQ,
// AWQ) or reads an NSQM file, and the engine — continuous batching, speculation, a pool small
// enough to preempt — serves every greedy request the tokens of its solo run on the same
// quantized weights; bad values and mismatched files are refused by name.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ch01/engine_test_support.h"
#include "ch04/model_test_support.h"
#include "ch04/sched_test_support.h"
#include "ch07/stack_test_support.h"
#include "common/engine/model/serving_weights.h"
#include "common/engine/serve/model_executor.h"
#include "common/engine/serve/serving_loop.h"
#include "common/error.h"
#include "common/quant/quant_io.h"
#include "common/engine/serve/draft_model_drafter.h"
#include "common/speculative/draft_models.h"

namespace nanoserve::engine {
namespace {

/// Random token sequences standing in for calibration text.
std::vector<std::vector<int>> calibration(int vocab) {
  std::vector<std::vector<int>> out;
  for (int s = 0; s < 4; ++s) {
    out.push_back(harness::synthetic_prompt(24, std::uint64_t(s), vocab, 1));
  }
  return out;
}

TEST(Ch07ServingWeights, ParsesEveryFormAndRefusesOthersByName) {
  EXPECT_EQ(parse_weights_spec("none").kind, WeightsSpec::Kind::kDense);
  const WeightsSpec awq = parse_weights_spec("int4-awq");
  EXPECT_EQ(awq.kind, WeightsSpec::Kind::kQuantize);
  EXPECT_EQ(awq.options.method, quant::QuantMethod::kAwq);
  EXPECT_EQ(awq.options.scheme.group_size, 32);
  EXPECT_TRUE(awq.needs_calibration());
  EXPECT_EQ(parse_weights_spec("int4-gptq-g128").options.scheme.group_size, 128);
  EXPECT_EQ(parse_weights_spec("int8-rtn").options.scheme.bits, 8);
  EXPECT_FALSE(parse_weights_spec("int8-rtn").needs_calibration());
  EXPECT_EQ(parse_weights_spec("/x/y.nsqm").kind, WeightsSpec::Kind::kFile);
  for (const char* bad : {"int3-rtn", "int4-foo", "int4-awq-g0", "fp8", ""}) {
    try {
      parse_weights_spec(bad);
      ADD_FAILURE() << bad << " accepted";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("'") + bad + "'"), std::string::npos) << e.what();
    }
  }
  const Model m = nanoserve::testing::micro_model(1);
  EXPECT_THROW(load_serving_weights(m, awq, DType::kF32, {}), InvalidArgument)
      << "AWQ without calibration";
}

TEST(Ch07ServingWeights, AFileOfAnotherShapeIsRefusedNamingTheField) {
  NANOSERVE_REQUIRE_DEVICE();
  const Model small = nanoserve::testing::micro_model(1, 1), deep = nanoserve::testing::micro_model(1, 2);
  const std::string path = ::testing::TempDir() + "ch07_deep.nsqm";
  quant::save_quantized_model(quant::quantize_model(deep, {}, parse_weights_spec("int8-rtn").options), path);
  try {
    load_serving_weights(small, parse_weights_spec(path), DType::kF32);
    ADD_FAILURE() << "a 2-layer file served for a 1-layer model";
  } catch (const LoadError& e) {
    EXPECT_EQ(e.field(), "n_layers");
  }
}

TEST(Ch07QuantizedEngine, GreedyRequestsGetTheirSoloTokensOnQuantizedWeights) {
  NANOSERVE_REQUIRE_DEVICE();
  const Model host = nanoserve::testing::micro_model(41, 2);
  const std::vector<std::vector<int>> calib = calibration(host.config.vocab_size);
  std::vector<Request> requests = nanoserve::testing::model_workload(9, 4, 24, 12, 8);
  for (Request& r : requests) {
    r.seq.sampling.temperature = 0.0f;
    r.stop_token_ids.clear();  // 1 in 24 tokens is EOS: outputs would stay short
    r.max_tokens = 8;
    r.num_speculative_tokens = 2;
  }
  // Quantized at load (AWQ), and a GPTQ model through an NSQM file.
  const std::string path = ::testing::TempDir() + "ch07_gptq.nsqm";
  quant::save_quantized_model(
      quant::quantize_model(host, calib, parse_weights_spec("int4-gptq").options), path);
  const ServingWeights dense = load_serving_weights(host, parse_weights_spec("none"), DType::kF32);
  for (const std::string& spec : {std::string("int4-awq"), path}) {
    SCOPED_TRACE(spec);
    const ServingWeights w = load_serving_weights(host, parse_weights_spec(spec), DType::kF32, calib);
    EXPECT_TRUE(w.quantized);
    EXPECT_LT(w.weight_bytes, dense.weight_bytes);
    const std::vector<std::vector<int>> solo = nanoserve::testing::solo_tokens(*w.device, requests, 48);
    SchedulerConfig c = nanoserve::testing::tiny_config(8, 4, 12, 4, 48);
    ModelExecutor executor(*w.device, executor_options_for(c, 2));
    NgramDrafter drafter;
    SimulatedClock clock;
    const ServingRun run = run_continuous(requests, c, executor, clock, {}, &drafter);
    nanoserve::testing::expect_solo_tokens(run, solo, spec);
    EXPECT_GT(run.num_preemptions, 0);
  }
}

}  // namespace
}  // namespace nanoserve::engine

namespace nanoserve::engine {
namespace {

// Every technique at once on the real kernels: INT8 weights, a draft model drafting, groups of
// samples, swap preemption in a pool too small, chunked prefill and prefix hits — greedy
// requests (so every sample of a group is the same) still get exactly their solo tokens.
TEST(Ch07WholeStack, EveryTechniqueAtOnceKeepsTheSoloTokens) {
  NANOSERVE_REQUIRE_DEVICE();
  const Model host = nanoserve::testing::micro_model(51, 2);
  const ServingWeights w = load_serving_weights(host, parse_weights_spec("int8-rtn"), DType::kF32);
  const DeviceModel draft(speculative::first_layers(w.reference, 1), DType::kF32);
  std::vector<Request> requests = nanoserve::testing::model_workload(13, 4, 24, 12, 8);
  for (Request& r : requests) {
    r.seq.sampling.temperature = 0.0f;
    r.stop_token_ids.clear();
    r.max_tokens = 8;
    r.num_speculative_tokens = 2;
    r.n = r.id() % 2 == 0 ? 2 : 1;
  }
  const std::vector<std::vector<int>> solo = nanoserve::testing::solo_tokens(*w.device, requests, 48);
  SchedulerConfig c = nanoserve::testing::tiny_config(9, 4, 12, 6, 48);
  c.enable_prefix_caching = true;
  c.preemption_mode = PreemptionMode::kSwap;
  c.num_host_blocks = 32;
  ModelExecutor executor(*w.device, executor_options_for(c, 2));
  DraftModelDrafterOptions o;
  o.num_kv_blocks = 24;
  o.block_size = 4;
  DraftModelDrafter drafter(draft, host.config.vocab_size, o);
  SimulatedClock clock;
  const ServingRun run = run_continuous(requests, c, executor, clock, {}, &drafter);
  ASSERT_EQ(run.requests.size(), 6u);  // 2 + 1 + 2 + 1 samples
  for (const Request& r : run.requests) {
    EXPECT_EQ(r.seq.token_ids, solo[std::size_t(r.group_id())])
        << "request " << r.group_id() << " sample " << r.sample_index;
  }
  EXPECT_GT(run.num_swap_outs, 0);
  EXPECT_GT(run.num_accepted_tokens, 0);
}

}  // namespace
}  // namespace nanoserve::engine
