// The benchmark client's pieces (apps/bench_serving/): the metrics it reports, computed from
// hand-made timelines; the Poisson dispatcher's bounds (concurrency, duration) against a fake
// backend; the loopback-only URL rule; the server's overhead from two /metrics scrapes.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "apps/bench_serving/http_backend.h"
#include "apps/bench_serving/load_run.h"
#include "apps/bench_serving/server_scrape.h"
#include "common/error.h"

namespace nanoserve::bench {
namespace {

RequestOutcome outcome(double send, std::vector<double> chunks, double end, int tokens) {
  RequestOutcome o;
  o.sent = o.ok = true;
  o.send_s = send;
  o.chunk_s = std::move(chunks);
  o.end_s = end;
  o.output_tokens = tokens;
  o.prompt_tokens = 10;
  return o;
}

TEST(Ch08BenchServing, SummaryHasVllmsDefinitionsOfTtftTpotItlAndGoodput) {
  LoadResult r;
  // A: TTFT 0.1, 5 tokens in 3 chunks, e2e 0.5 -> TPOT (0.5 - 0.1) / 4 = 0.1.
  r.outcomes.push_back(outcome(0.0, {0.1, 0.3, 0.5}, 0.5, 5));
  // B: TTFT 0.4, 2 tokens, e2e 1.0 -> TPOT 0.6 (misses a TPOT SLO of 200 ms).
  r.outcomes.push_back(outcome(1.0, {1.4, 2.0}, 2.0, 2));
  RequestOutcome failed;
  failed.sent = true;
  failed.error = "HTTP 429: full";
  r.outcomes.push_back(failed);
  r.outcomes.push_back(RequestOutcome{});  // never sent
  r.duration_s = 2.0;
  const auto j = summarize_load(r, parse_slos({"ttft:500", "tpot:200"}));
  EXPECT_EQ(j["sent"], 3);
  EXPECT_EQ(j["completed"], 2);
  EXPECT_EQ(j["failed"], 1);
  EXPECT_EQ(j["errors"][0], "HTTP 429: full");
  EXPECT_EQ(j["output_tokens"], 7);
  EXPECT_EQ(j["input_tokens"], 20);
  EXPECT_DOUBLE_EQ(j["request_throughput"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(j["output_throughput"].get<double>(), 3.5);
  EXPECT_DOUBLE_EQ(j["total_token_throughput"].get<double>(), 13.5);
  EXPECT_NEAR(j["ttft_ms"]["mean"].get<double>(), 250, 1e-9);
  EXPECT_NEAR(j["tpot_ms"]["p50"].get<double>(), 350, 1e-9);  // (100 + 600) / 2
  EXPECT_EQ(j["itl_ms"]["count"], 3);                          // 0.2, 0.2, 0.6
  EXPECT_NEAR(j["itl_ms"]["max"].get<double>(), 600, 1e-9);
  EXPECT_NEAR(j["e2el_ms"]["p99"].get<double>(), 995, 1e-9);   // 500 + 0.99 * 500
  EXPECT_DOUBLE_EQ(j["goodput"].get<double>(), 0.5);           // only A meets both
  EXPECT_TRUE(summarize_load(r, {})["goodput"].is_null());
}

TEST(Ch08BenchServing, BadSlosAndNonLoopbackUrlsNameTheFlag) {
  for (const char* bad : {"ttft", "ttft:", "ttft:-3", "latency:5", "tpot:5ms"}) {
    EXPECT_THROW(parse_slos({bad}), InvalidArgument) << bad;
  }
  EXPECT_EQ(LoopbackUrl::parse("http://127.0.0.1:8000").port, 8000);
  EXPECT_EQ(LoopbackUrl::parse("http://localhost:9/").host, "localhost");
  EXPECT_EQ(LoopbackUrl::parse("http://[::1]:81").host, "::1");
  for (const char* bad : {"https://127.0.0.1:1", "http://10.0.0.1:80", "http://example.com:80",
                          "http://127.0.0.1:0", "http://127.0.0.1:8000/v1", "http://127.0.0.1.evil.com:1"}) {
    try {
      LoopbackUrl::parse(bad);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("--base-url"), std::string::npos) << e.what();
    }
  }
}

// Answers after `ms`, counting how many requests it holds at once.
class FakeBackend : public Backend {
 public:
  explicit FakeBackend(int ms) : ms_(ms) {}
  RequestOutcome run(const BenchRequest& r, Clock::time_point start,
                     Clock::time_point deadline) override {
    const int now = ++in_flight_;
    int seen = most_;
    while (now > seen && !most_.compare_exchange_weak(seen, now)) {
    }
    RequestOutcome o;
    o.sent = true;
    o.send_s = seconds_since(start);
    o.prompt_tokens = static_cast<int>(r.prompt.size());
    const auto until = std::min(deadline, Clock::now() + std::chrono::milliseconds(ms_));
    std::this_thread::sleep_until(until);
    o.end_s = seconds_since(start);
    o.incomplete = until == deadline;
    o.ok = !o.incomplete;
    o.chunk_s = {o.end_s};
    o.output_tokens = 1;
    --in_flight_;
    return o;
  }
  std::string name() const override { return "fake"; }
  std::atomic<int> most_{0};

 private:
  int ms_;
  std::atomic<int> in_flight_{0};
};

std::vector<BenchRequest> arrivals(std::vector<double> at) {
  std::vector<BenchRequest> out;
  for (double t : at) {
    BenchRequest r;
    r.index = static_cast<int>(out.size());
    r.arrival_s = t;
    r.prompt = {1, 2};
    out.push_back(r);
  }
  return out;
}

TEST(Ch08BenchServing, RequestsLeaveAtTheirArrivalTimesWithinTheConcurrencyBound) {
  FakeBackend fake(60);
  const LoadResult r = run_load(fake, arrivals({0, 0.05, 0.1}), {0, 30});
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_NEAR(r.outcomes[i].send_s, 0.05 * double(i), 0.04) << i;  // on time, not queued
  }
  EXPECT_GE(fake.most_.load(), 2);  // the first was still running when the second left
  FakeBackend one_at_a_time(30);
  const LoadResult s = run_load(one_at_a_time, arrivals({0, 0, 0, 0}), {1, 30});
  EXPECT_EQ(one_at_a_time.most_.load(), 1);
  EXPECT_EQ(summarize_load(s, {})["completed"], 4);
}

TEST(Ch08BenchServing, NothingLeavesAfterTheDurationAndRunningRequestsAreCut) {
  FakeBackend slow(5000);
  const auto t0 = Clock::now();
  const LoadResult r = run_load(slow, arrivals({0, 0.05, 10}), {0, 0.3});
  EXPECT_LT(seconds_since(t0), 2.0);  // neither the 5 s requests nor the arrival at 10 s waited
  const auto j = summarize_load(r, {});
  EXPECT_EQ(j["sent"], 2);
  EXPECT_EQ(j["incomplete"], 2);
  EXPECT_EQ(j["completed"], 0);
}

TEST(Ch08BenchServing, ServerOverheadFromTwoScrapes) {
  const auto before = parse_prometheus(
      "# HELP x y\nnanoserve:iteration_steps_total 10\nnanoserve:iteration_step_seconds_total 1\n"
      "nanoserve:generation_tokens_total 100\nnanoserve:server_seconds_total{phase=\"write\"} 0.5\n"
      "process_cpu_seconds_total 2\nnanoserve:engine_thread_cpu_seconds_total 1.5\n"
      "nanoserve:x_bucket{le=\"+Inf\"} 3\n");
  EXPECT_EQ(before.at("nanoserve:server_seconds_total{phase=\"write\"}"), 0.5);
  const auto after = parse_prometheus(
      "nanoserve:iteration_steps_total 30\nnanoserve:iteration_step_seconds_total 5\n"
      "nanoserve:generation_tokens_total 1380\nnanoserve:server_seconds_total{phase=\"write\"} 0.564\n"
      "nanoserve:server_seconds_total{phase=\"serialize\"} 0.064\n"
      "process_cpu_seconds_total 6.2\nnanoserve:engine_thread_cpu_seconds_total 5.5\n");
  const auto o = server_overhead(before, after);
  EXPECT_DOUBLE_EQ(o["tokens_per_step"].get<double>(), 64);
  EXPECT_DOUBLE_EQ(o["step_ms"].get<double>(), 200);
  EXPECT_DOUBLE_EQ(o["engine_thread_cpu_ms_per_step"].get<double>(), 200);  // 4 s over 20 steps
  EXPECT_NEAR(o["server_us_per_token"]["write"].get<double>(), 50, 1e-9);
  EXPECT_NEAR(o["server_us_per_token"]["total"].get<double>(), 100, 1e-9);
  EXPECT_NEAR(o["server_work_per_step_pct"].get<double>(), 3.2, 1e-9);  // 0.128 s of 4 s
  EXPECT_NEAR(o["other_cpu_vs_engine_pct"].get<double>(), 5, 1e-9);     // 0.2 of 4 s
}

}  // namespace
}  // namespace nanoserve::bench
