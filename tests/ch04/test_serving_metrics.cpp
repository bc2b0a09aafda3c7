// Serving metrics: the percentile method on hand-computed cases (numpy's default gives the
// same numbers), per-request latencies, run summaries and their JSON records.
#include <gtest/gtest.h>

#include <vector>

#include "common/harness/serving_metrics.h"
#include "common/error.h"

namespace nanoserve {
namespace {

TEST(Ch04Metrics, PercentileInterpolatesBetweenClosestRanks) {
  const std::vector<double> v = {4, 1, 3, 2};  // order does not matter
  EXPECT_DOUBLE_EQ(harness::percentile(v, 0), 1.0);
  EXPECT_DOUBLE_EQ(harness::percentile(v, 50), 2.5);    // numpy.percentile([1,2,3,4], 50)
  EXPECT_DOUBLE_EQ(harness::percentile(v, 90), 3.7);    // h = 3 * 0.9 = 2.7 -> 3 + 0.7 * (4 - 3)
  EXPECT_DOUBLE_EQ(harness::percentile(v, 100), 4.0);
  EXPECT_DOUBLE_EQ(harness::percentile({5}, 99), 5.0);
  EXPECT_THROW(harness::percentile({}, 50), InvalidArgument);
  EXPECT_THROW(harness::percentile(v, 100.5), InvalidArgument);
}

TEST(Ch04Metrics, SummarizeGivesMeanPercentilesAndMax) {
  const harness::LatencySummary s = harness::summarize({1, 2, 3, 4});
  EXPECT_EQ(s.count, 4);
  EXPECT_DOUBLE_EQ(s.mean, 2.5);
  EXPECT_DOUBLE_EQ(s.p50, 2.5);
  EXPECT_DOUBLE_EQ(s.p99, 3.97);
  EXPECT_DOUBLE_EQ(s.max, 4.0);
  EXPECT_EQ(harness::summarize({}).count, 0);
}

engine::Request finished_request(int64_t id, engine::FinishReason reason, std::vector<double> token_times) {
  engine::Request r = engine::make_request(id, {1, 2, 3}, 10, SamplingParams{}, /*arrival_s=*/1.0);
  r.first_scheduled_s = 2.0;
  for (double t : token_times) {
    r.seq.token_ids.push_back(5);
    r.token_times_s.push_back(t);
  }
  engine::finish_request(r, reason, "x", token_times.empty() ? 1.0 : token_times.back());
  return r;
}

TEST(Ch04Metrics, RequestLatencyFollowsTheTimeline) {
  const harness::RequestLatency l =
      harness::request_latency(finished_request(0, engine::FinishReason::kStop, {3.0, 3.5, 4.5}));
  EXPECT_DOUBLE_EQ(l.queue_s, 1.0);
  EXPECT_DOUBLE_EQ(l.ttft_s, 2.0);
  EXPECT_DOUBLE_EQ(l.tpot_s, 0.75);  // (4.5 - 3) / 2
  EXPECT_EQ(l.itl_s, (std::vector<double>{0.5, 1.0}));
  EXPECT_DOUBLE_EQ(l.e2e_s, 3.5);
  const harness::RequestLatency one = harness::request_latency(finished_request(1, engine::FinishReason::kLength, {3.0}));
  EXPECT_EQ(one.tpot_s, -1);  // needs two tokens
  const harness::RequestLatency cancelled =
      harness::request_latency(finished_request(2, engine::FinishReason::kCancelled, {3.0}));
  EXPECT_EQ(cancelled.e2e_s, -1);  // not completed
}

TEST(Ch04Metrics, RunSummaryCountsTokensRatesAndKVUsage) {
  engine::ServingRun run;
  run.start_s = 0;
  run.end_s = 5;
  run.num_kv_blocks = 10;
  run.requests.push_back(finished_request(0, engine::FinishReason::kStop, {3.0, 3.5, 4.5}));
  run.requests.push_back(finished_request(1, engine::FinishReason::kCancelled, {3.0}));
  engine::Request rejected = engine::make_request(2, {1, 2, 3, 4}, 10);
  engine::finish_request(rejected, engine::FinishReason::kRejected, "too long", 0);
  run.requests.push_back(rejected);
  engine::StepSample a, b;
  a.kv_blocks_used = 2;
  a.num_batched_tokens = 6;
  b.kv_blocks_used = 6;
  b.num_batched_tokens = 2;
  run.steps = {a, b};
  run.num_preemptions = 3;
  run.kv.queries = 8;
  run.kv.hits = 2;
  const harness::ServingMetrics m = harness::compute_metrics(run);
  EXPECT_EQ(m.num_requests, 3);
  EXPECT_EQ(m.num_completed, 1);
  EXPECT_EQ(m.num_cancelled, 1);
  EXPECT_EQ(m.num_rejected, 1);
  EXPECT_EQ(m.input_tokens, 6);   // the two scheduled prompts of 3 tokens
  EXPECT_EQ(m.output_tokens, 4);  // 3 + 1 (cancelled tokens were delivered too)
  EXPECT_DOUBLE_EQ(m.output_tokens_per_s, 0.8);
  EXPECT_DOUBLE_EQ(m.input_tokens_per_s, 1.2);
  EXPECT_DOUBLE_EQ(m.requests_per_s, 0.2);
  EXPECT_EQ(m.ttft.count, 2);
  EXPECT_EQ(m.e2e.count, 1);
  EXPECT_EQ(m.itl.count, 2);
  EXPECT_EQ(m.kv_blocks_peak, 6);
  EXPECT_DOUBLE_EQ(m.kv_usage_mean, 0.4);  // (0.2 + 0.6) / 2
  EXPECT_DOUBLE_EQ(m.mean_batch_tokens, 4.0);
  EXPECT_DOUBLE_EQ(m.prefix_hit_rate, 0.25);

  const nlohmann::json j = harness::metrics_record("continuous", m);
  EXPECT_EQ(j["config"], "continuous");
  EXPECT_EQ(j["preemptions"], 3);
  EXPECT_DOUBLE_EQ(j["ttft_p50_s"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(j["output_tokens_per_s"].get<double>(), 0.8);
  const nlohmann::json t = harness::kv_timeline(run);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[1]["kv_blocks_used"], 6);
}

}  // namespace
}  // namespace nanoserve
