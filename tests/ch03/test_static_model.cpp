// Static batching on the real model (ModelExecutor): every request's tokens equal its solo
// run through chapter 1's NaiveDecoder, in a batch of four — greedy and seeded sampling
// — also when the padded prefill is cut into several forward passes; and the executor really
// computes the padding and idle rows the batcher counts.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "ch01/engine_test_support.h"
#include "ch04/model_test_support.h"
#include "common/engine/serve/model_executor.h"
#include "common/engine/serve/static_batcher.h"
#include "common/model_bundle.h"

namespace nanoserve::engine {
namespace {

using nanoserve::testing::expect_solo_tokens;
using nanoserve::testing::model_workload;
using nanoserve::testing::solo_tokens;

constexpr int kMaxModelLen = 64;

TEST(Ch03StaticModel, EveryRequestGetsItsSoloTokensAndWastedRowsAreComputed) {
  NANOSERVE_REQUIRE_DEVICE();
  const Model model = load_model_bundle("synthetic:tiny").model;
  const DeviceModel device(model, DType::kF32);
  // Five requests: a batch of four, then one alone. Kept small: the simulator runs every row.
  const std::vector<engine::Request> requests = model_workload(7, 5, model.config.vocab_size, 36, 6);
  const std::vector<std::vector<int>> solo = solo_tokens(device, requests, kMaxModelLen);
  for (int batch_size : {4}) {
    engine::StaticBatchConfig config;
    config.batch_size = batch_size;
    config.max_model_len = kMaxModelLen;
    config.num_kv_blocks = 64;
    config.block_size = 4;
    config.enable_prefix_caching = true;  // request 1 may hit request 0's blocks
    // 16 rows per pass: a batch of 4 prompts (up to 36 tokens each) needs several passes.
    engine::ModelExecutor executor(device, engine::executor_options_for(config, 16));
    engine::SimulatedClock clock;
    const engine::ServingRun run = engine::run_static(requests, config, executor, clock);
    const std::string what = "batch size " + std::to_string(batch_size);
    expect_solo_tokens(run, solo, what);
    EXPECT_EQ(executor.stats().rows, run.waste.useful_rows) << what;
    EXPECT_EQ(executor.stats().wasted_rows, run.waste.padding_rows + run.waste.idle_rows) << what;
    EXPECT_GT(run.waste.padding_rows, 0) << "the prompts have different lengths";
    EXPECT_GT(run.kv.prefill_tokens_skipped, 0) << "request 1 shares request 0's prompt";
    EXPECT_GT(executor.counters().passes, static_cast<long long>(run.steps.size()))
        << "the padded prefill needs more than one 16-row pass";
  }
}

// On a GPU a padded batch reads the weights once per pass, padding included; computing the
// padding as passes of its own would charge static batching twice and inflate continuous
// batching's win. With passes big enough for a whole step, every step is exactly one pass.
TEST(Ch03StaticModel, PaddingAndIdleRowsAreRowsOfTheSamePass) {
  NANOSERVE_REQUIRE_DEVICE();
  const Model model = load_model_bundle("synthetic:tiny").model;
  const DeviceModel device(model, DType::kF32);
  const std::vector<engine::Request> requests = model_workload(3, 4, model.config.vocab_size, 20, 5);
  engine::StaticBatchConfig config;
  config.batch_size = 4;
  config.max_model_len = kMaxModelLen;
  config.num_kv_blocks = 64;
  config.block_size = 4;
  engine::ModelExecutor executor(device, engine::executor_options_for(config, 256));
  engine::SimulatedClock clock;
  const engine::ServingRun run = engine::run_static(requests, config, executor, clock);
  EXPECT_GT(run.waste.padding_rows + run.waste.idle_rows, 0) << "mixed lengths waste rows";
  EXPECT_EQ(executor.stats().wasted_rows, run.waste.padding_rows + run.waste.idle_rows);
  EXPECT_EQ(executor.counters().passes, static_cast<long long>(run.steps.size()))
      << "wasted rows ran in passes of their own";
  expect_solo_tokens(run, solo_tokens(device, requests, kMaxModelLen), "padded passes");
}

}  // namespace
}  // namespace nanoserve::engine
