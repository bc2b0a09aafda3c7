// The real model under continuous batching (ModelExecutor over ModelRunner + PagedKVCache):
// every request's tokens equal its solo run through chapter 1's NaiveDecoder — greedy and
// seeded sampling, with chunked prefill, prefix-cache hits and preemptions forced by a tiny
// KV pool, decode steps replayed from CUDA graphs (padded to their bucket) or launched eagerly —
// and requests that can never fit are rejected with a reason while the rest run.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "ch01/engine_test_support.h"
#include "ch04/model_test_support.h"
#include "common/engine/serve/model_executor.h"
#include "common/engine/serve/serving_loop.h"
#include "common/error.h"
#include "common/model_bundle.h"
#include "test_support.h"

namespace nanoserve::engine {
namespace {

using nanoserve::testing::expect_solo_tokens;
using nanoserve::testing::model_workload;
using nanoserve::testing::solo_tokens;

constexpr int kMaxModelLen = 64;

engine::SchedulerConfig tiny_pool_config(bool chunked, int num_blocks) {
  engine::SchedulerConfig c;
  c.max_num_seqs = 4;
  c.max_num_batched_tokens = chunked ? 12 : kMaxModelLen;  // 12 < most prompts: chunks
  c.max_model_len = kMaxModelLen;
  c.enable_chunked_prefill = chunked;
  c.num_kv_blocks = num_blocks;
  c.block_size = 4;
  c.enable_prefix_caching = true;
  return c;
}

class Ch04ModelExecutor : public ::testing::Test {
 protected:
  void load(const std::string& spec) {
    model_ = load_model_bundle(spec).model;
    device_ = std::make_unique<DeviceModel>(model_, DType::kF32);
  }
  // Continuous batching of `requests` under `config`; checks the solo tokens and returns the
  // preemptions.
  long long check_continuous(const std::vector<engine::Request>& requests,
                             const std::vector<std::vector<int>>& solo,
                             const engine::SchedulerConfig& config, const std::string& what,
                             bool device_sampling = true, bool cuda_graphs = true) {
    engine::ModelExecutorOptions options = engine::executor_options_for(config);
    options.device_sampling = device_sampling;
    options.cuda_graphs = cuda_graphs;
    engine::ModelExecutor executor(*device_, options);
    engine::SimulatedClock clock;
    const engine::ServingRun run = engine::run_continuous(requests, config, executor, clock);
    expect_solo_tokens(run, solo, what);
    EXPECT_EQ(executor.counters().passes, static_cast<long long>(run.steps.size()))
        << what << ": a step sized to the scheduler's budget is exactly one forward pass";
    // Every pass is one upload, and either a replay or eager launches; graphs are reused.
    const StepCounters c = executor.counters();
    EXPECT_EQ(c.passes, executor.counters().passes) << what;
    EXPECT_EQ(c.uploads, c.passes) << what;
    EXPECT_EQ(c.eager_passes + c.graph_replays, c.passes) << what;
    if (cuda_graphs) {
      EXPECT_GT(c.graph_replays, 0) << what << ": decode steps replay graphs";
      const auto buckets = static_cast<long long>(cuda_graph_buckets(config.max_num_seqs).size());
      EXPECT_LE(c.graph_captures, buckets) << what << ": one capture per bucket";
    } else {
      EXPECT_EQ(c.graph_replays + c.graph_captures, 0) << what;
    }
    last_counters_ = c;
    return run.num_preemptions;
  }
  StepCounters last_counters_;
  Model model_;
  std::unique_ptr<DeviceModel> device_;
};

TEST_F(Ch04ModelExecutor, EveryRequestGetsItsSoloTokensWithChunkingAndPreemption) {
  NANOSERVE_REQUIRE_DEVICE();
  load("synthetic:tiny");
  // Few requests and short outputs: the simulator runs every row of every layer on the CPU.
  const std::vector<engine::Request> requests = model_workload(3, 5, model_.config.vocab_size, 36, 8);
  const std::vector<std::vector<int>> solo = solo_tokens(*device_, requests, kMaxModelLen);
  // 10 blocks of 4 tokens: one request of 36 + 8 tokens fits, four at once do not.
  long long preemptions = 0;
  for (bool chunked : {true, false}) {
    preemptions += check_continuous(requests, solo, tiny_pool_config(chunked, 10),
                                    chunked ? "chunked, 10 blocks" : "unchunked, 10 blocks");
  }
  EXPECT_GT(preemptions, 0) << "the 10-block pool should force preemptions";
  EXPECT_EQ(check_continuous(requests, solo, tiny_pool_config(true, 256), "chunked, 256 blocks"),
            0);
}

// The solo runs sample on the host and launch eagerly; the executor samples on the device by
// default (only token ids leave it) and replays decode steps from CUDA graphs (batches of 3
// padded to 4). With device_sampling and cuda_graphs off it downloads the logits and launches
// every kernel: both give the solo tokens, so graphs change no token.
TEST_F(Ch04ModelExecutor, DeviceSamplingWithGraphsAndHostSamplingEagerGiveTheSoloTokens) {
  NANOSERVE_REQUIRE_DEVICE();
  load("synthetic:tiny");
  const std::vector<engine::Request> requests = model_workload(4, 9, model_.config.vocab_size, 20, 6);
  const std::vector<std::vector<int>> solo = solo_tokens(*device_, requests, kMaxModelLen);
  check_continuous(requests, solo, tiny_pool_config(true, 256), "device sampling, graphs");
  EXPECT_GT(last_counters_.padding_rows, 0) << "some decode batch was padded to its bucket";
  check_continuous(requests, solo, tiny_pool_config(true, 256), "host sampling, eager", false,
                   false);
}

TEST_F(Ch04ModelExecutor, StoriesRequestsGetTheirSoloTokensUnderContinuousBatching) {
  NANOSERVE_REQUIRE_DEVICE();
  NANOSERVE_REQUIRE_DATA(path, "stories260K.bin");
  load(path);
  const std::vector<engine::Request> requests = model_workload(5, 4, model_.config.vocab_size, 24, 8);
  const std::vector<std::vector<int>> solo = solo_tokens(*device_, requests, kMaxModelLen);
  check_continuous(requests, solo, tiny_pool_config(true, 10), "stories260K");
}

TEST_F(Ch04ModelExecutor, RequestsThatCanNeverFitAreRejectedWithAReason) {
  NANOSERVE_REQUIRE_DEVICE();
  load("synthetic:tiny");
  engine::SchedulerConfig config = tiny_pool_config(true, 6);  // 24 slots
  std::vector<engine::Request> requests;
  requests.push_back(engine::make_request(0, std::vector<int>(70, 5), 4));  // > max_model_len 64
  requests.push_back(engine::make_request(1, std::vector<int>(30, 5), 4));  // 8 blocks > the pool
  requests.push_back(engine::make_request(2, {1, 7, 9}, 4, SamplingParams{0.0f}));  // fits
  engine::ModelExecutor executor(*device_, engine::executor_options_for(config));
  engine::SimulatedClock clock;
  const engine::ServingRun run = engine::run_continuous(requests, config, executor, clock);
  ASSERT_EQ(run.requests.size(), 3u);
  EXPECT_EQ(run.requests[0].finish_reason, engine::FinishReason::kRejected);
  EXPECT_NE(run.requests[0].finish_detail.find("longer than the context"), std::string::npos)
      << run.requests[0].finish_detail;
  EXPECT_EQ(run.requests[1].finish_reason, engine::FinishReason::kRejected);
  EXPECT_NE(run.requests[1].finish_detail.find("whole pool has 6"), std::string::npos)
      << run.requests[1].finish_detail;
  EXPECT_EQ(run.requests[2].finish_reason, engine::FinishReason::kLength);
  EXPECT_EQ(run.requests[2].num_output_tokens(), 4);
}

TEST_F(Ch04ModelExecutor, ReadsOnlyTheSchedulerOutputAndRefusesAPlanOutsideItsPool) {
  NANOSERVE_REQUIRE_DEVICE();
  load("synthetic:tiny");
  engine::ModelExecutorOptions o;
  o.num_kv_blocks = 8;
  o.block_size = 4;
  engine::ModelExecutor executor(*device_, o);
  engine::KVCacheManager kv(8, 4, false);
  engine::Request r = engine::make_request(0, {1, 2, 3}, 2);
  kv.allocate(r.seq);
  engine::SchedulerOutput out;
  out.add(r, kv.block_table(0), 0, 3);
  EXPECT_EQ(executor.execute(out).size(), 1u);  // no manager handed over: the plan suffices
  // A scheduler with a bigger pool than the executor's: its blocks are refused, not written.
  engine::ModelExecutorOptions small = o;
  small.num_kv_blocks = 2;
  engine::ModelExecutor tiny(*device_, small);
  engine::KVCacheManager big(16, 4, false);
  for (int i = 0; i < 12; ++i) big.allocate(engine::make_request(10 + i, {1, 2, 3, 4}, 1).seq);
  engine::Request late = engine::make_request(1, {1, 2, 3}, 2);
  big.allocate(late.seq);  // its block is past block 1
  engine::SchedulerOutput beyond;
  beyond.add(late, big.block_table(1), 0, 3);
  EXPECT_THROW(tiny.execute(beyond), InvalidArgument);
  engine::ModelExecutorOptions too_long;
  too_long.max_seq_len = model_.config.max_seq_len + 1;
  EXPECT_THROW(engine::ModelExecutor(*device_, too_long), InvalidArgument);
}

}  // namespace
}  // namespace nanoserve::engine
