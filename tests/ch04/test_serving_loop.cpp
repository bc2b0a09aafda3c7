// The continuous serving loop on a virtual clock: exact times, idling until arrivals, and the
// effect chunked prefill exists for — decodes keep flowing while a long prompt is prefilled.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "common/harness/fake_executor.h"
#include "common/engine/serve/serving_loop.h"
#include "common/harness/serving_metrics.h"
#include "sched_test_support.h"

namespace nanoserve {
namespace {

using testing::req;
constexpr int kVocab = 50;

TEST(Ch04ServingLoop, TimesFollowTheCostModelAndTheLoopIdlesUntilArrivals) {
  engine::SimulatedClock clock(100.0);  // arrival times are offsets from the start
  harness::FakeExecutor ex(64, 4, kVocab, &clock, harness::FakeCostModel{1.0, 0.0});
  const engine::ServingRun run = engine::run_continuous({req(0, 4, 3, 0.0), req(1, 2, 1, 10.0)},
                                        testing::tiny_config(64, 4, 32), ex, clock);
  ASSERT_EQ(run.requests.size(), 2u);
  const engine::Request& a = run.requests[0];
  const engine::Request& b = run.requests[1];
  EXPECT_EQ(a.token_times_s, (std::vector<double>{101, 102, 103}));
  EXPECT_DOUBLE_EQ(b.arrival_s, 110);
  EXPECT_DOUBLE_EQ(b.first_scheduled_s, 110);
  EXPECT_DOUBLE_EQ(b.finished_s, 111);
  EXPECT_DOUBLE_EQ(run.start_s, 100);
  EXPECT_DOUBLE_EQ(run.end_s, 111);
  EXPECT_EQ(run.steps.size(), 4u);
  const harness::ServingMetrics m = harness::compute_metrics(run);
  EXPECT_DOUBLE_EQ(m.ttft.max, 1.0);
  EXPECT_DOUBLE_EQ(m.duration_s, 11.0);
}

// Request 0 decodes 12 tokens; a 90-token prompt arrives at t = 2.5. Unchunked, one pass
// computes all 90 rows and request 0 waits 1 + 0.1 * 91 s for its next token; chunked by 16,
// no pass has more than 16 rows.
TEST(Ch04ServingLoop, ChunkedPrefillBoundsTheInterTokenLatencyOfRunningRequests) {
  auto max_itl_of_first = [](bool chunked) {
    engine::SchedulerConfig c = testing::tiny_config(64, 4, chunked ? 16 : 96, 8, 96);
    c.enable_chunked_prefill = chunked;
    engine::SimulatedClock clock;
    harness::FakeExecutor ex(64, 4, kVocab, &clock, harness::FakeCostModel{1.0, 0.1});
    const engine::ServingRun run = engine::run_continuous({req(0, 2, 12, 0.0), req(1, 90, 1, 2.5)}, c, ex, clock);
    const harness::RequestLatency l = harness::request_latency(run.requests[0]);
    return *std::max_element(l.itl_s.begin(), l.itl_s.end());
  };
  EXPECT_NEAR(max_itl_of_first(false), 1.0 + 0.1 * 91, 1e-9);
  EXPECT_NEAR(max_itl_of_first(true), 1.0 + 0.1 * 16, 1e-9);
}

TEST(Ch04ServingLoop, RejectedRequestsAreReportedWithTheRest) {
  engine::SimulatedClock clock;
  harness::FakeExecutor ex(4, 4, kVocab, &clock);
  const engine::ServingRun run = engine::run_continuous({req(0, 40, 1), req(1, 3, 2)},
                                        testing::tiny_config(4, 4, 32), ex, clock);
  ASSERT_EQ(run.requests.size(), 2u);
  EXPECT_EQ(run.requests[0].finish_reason, engine::FinishReason::kRejected);
  EXPECT_EQ(run.requests[1].num_output_tokens(), 2);
}

}  // namespace
}  // namespace nanoserve
