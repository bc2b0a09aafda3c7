// Bad input, classes 1, 2 and 5 of issue 19, for workloads: a trace line nesting a few hundred
// thousand arrays, traces and generators asking for more requests than memory can follow, and
// arrivals so far in the future that a run never ends. Each is refused with the file, line and
// field, or the generator's parameter, before any request is built; what the limits allow runs.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "common/harness/serving_checks.h"
#include "common/harness/scheduler_bench.h"
#include "common/harness/trace.h"
#include "common/harness/workload.h"
#include "common/error.h"
#include "test_support.h"

namespace nanoserve {
namespace {

const std::string kLine = R"({"arrival_s": 0, "prompt_len": 4, "max_tokens": 2, "seed": 1})";

/// "file|field|message" of the LoadError parse_trace throws for `text`, or "no error".
std::string trace_error(const std::string& text) {
  try {
    harness::parse_trace(text, "t.jsonl");
  } catch (const LoadError& e) {
    return e.file() + "|" + e.field() + "|" + e.what();
  }
  return "no error";
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(Ch04BadInputWorkload, ADeeplyNestedLineIsRefusedWithItsLine) {
  const std::string deep = std::string(300000, '[') + std::string(300000, ']');
  const std::string e =
      trace_error(kLine + "\n\n{\"arrival_s\": " + deep + ", \"max_tokens\": 2, \"seed\": 1}\n");
  EXPECT_TRUE(contains(e, "t.jsonl:3|json|t.jsonl:3: json: arrays and objects nest deeper than 64"))
      << e.substr(0, 200);
}

TEST(Ch04BadInputWorkload, ATraceHoldsAtMostTheStatedNumberOfRequests) {
  std::string text;
  for (int i = 0; i < harness::kMaxTraceRequests; ++i) text += kLine + "\n";
  EXPECT_EQ(harness::parse_trace(text, "t.jsonl").size(), std::size_t(harness::kMaxTraceRequests));
  const std::string e = trace_error(text + kLine + "\n");
  EXPECT_TRUE(contains(e, "t.jsonl:100001|file|")) << e;
  EXPECT_TRUE(contains(e, "more than 100000 requests")) << e;
}

TEST(Ch04BadInputWorkload, ArrivalsPastTheStatedLimitAreRefused) {
  for (const char* arrival : {"1e300", "10000000.5"}) {
    const std::string e = trace_error(std::string("{\"arrival_s\": ") + arrival +
                                      ", \"prompt_len\": 4, \"max_tokens\": 2, \"seed\": 1}");
    EXPECT_TRUE(contains(e, "t.jsonl:1|arrival_s|")) << e;
    EXPECT_TRUE(contains(e, "at most 1e7 (seconds)")) << e;
    EXPECT_LT(e.size(), 200u) << "the value is shown briefly: " << e;
  }
  EXPECT_NO_THROW(harness::parse_trace(R"({"arrival_s": 1e7, "prompt_len": 4, "max_tokens": 2, "seed": 1})",
                              "t.jsonl"));
}

TEST(Ch04BadInputWorkload, TheGeneratorRefusesTinyRatesAndHugeCounts) {
  harness::WorkloadSpec spec;
  spec.num_requests = 2;
  spec.rate = 1e-9;  // the issue's example: the second arrival ~10^9 s away
  try {
    harness::generate_workload(spec);
    ADD_FAILURE() << "a rate of 1e-9 was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_TRUE(contains(e.what(), "request 1 would arrive at")) << e.what();
    EXPECT_TRUE(contains(e.what(), "past the limit of 1e7 s")) << e.what();
  }
  spec.rate = 4;
  spec.num_requests = 1000000000;  // --num-requests 1e9 died in std::bad_alloc
  try {
    harness::generate_workload(spec);
    ADD_FAILURE() << "1e9 requests were accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_TRUE(contains(e.what(), "num_requests = 1000000000 is outside [1, 100000]")) << e.what();
  }
}

TEST(Ch04BadInputWorkload, TheWallClockRefusesToWaitForHours) {
  std::vector<engine::Request> requests;
  requests.push_back(engine::make_request(0, {1, 2}, 2, SamplingParams{}, 0.0));
  requests.push_back(engine::make_request(1, {1, 2}, 2, SamplingParams{}, 3601.0));
  EXPECT_NO_THROW(harness::check_wall_clock_wait(requests, harness::ClockKind::kCpu));
  try {
    harness::check_wall_clock_wait(requests, harness::ClockKind::kWall);
    ADD_FAILURE() << "a wait of an hour was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_TRUE(contains(e.what(), "--clock wall would wait that long in real time")) << e.what();
  }
  requests.back().arrival_s = 3600;
  EXPECT_NO_THROW(harness::check_wall_clock_wait(requests, harness::ClockKind::kWall));
}

TEST(Ch04BadInputWorkload, RejectedRequestsAreCountedAndExplained) {
  engine::ServingRun run;
  for (int i = 0; i < 3; ++i) run.requests.push_back(engine::make_request(i, {1, 2}, 2, SamplingParams{}));
  engine::finish_request(run.requests[1], engine::FinishReason::kRejected, "prompt of 300 tokens is too long", 0);
  nlohmann::json record;
  EXPECT_EQ(harness::rejection_line("static b=4", run, &record),
            "static b=4: rejected 1 of 3 requests (first: request 1, prompt of 300 tokens is too long)");
  EXPECT_EQ(record["rejections"].size(), 1u);
  EXPECT_EQ(record["rejections"][0]["id"], 1);
  for (engine::Request& r : run.requests) engine::finish_request(r, engine::FinishReason::kRejected, "too long", 0);
  EXPECT_THROW(harness::rejection_line("static b=4", run, nullptr), InvalidArgument);  // nothing ran
  EXPECT_FALSE(harness::rejection_line("sweep point", run, nullptr, /*refuse_all=*/false).empty());
  run.requests.clear();
  EXPECT_EQ(harness::rejection_line("empty", run, nullptr), "");
}

TEST(Ch04BadInputWorkload, SchedulerBenchSizesAreCheckedBeforeTheyOverflow) {
  harness::SchedulerBenchOptions o;
  o.num_seqs = 100000000;  // the issue's example: "max_num_batched_tokens = -84901888"
  try {
    harness::bench_scheduler(o);
    ADD_FAILURE() << "100000000 sequences were accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_TRUE(contains(e.what(), "num_seqs = 100000000 (limit 65536)")) << e.what();
    EXPECT_FALSE(contains(e.what(), "-84901888")) << e.what();
  }
}

TEST(Ch04BadInputWorkload, ATraceThatIsNotARegularFileIsRefused) {
  const std::string dir = testing::temp_dir() + "trace_dir";
  std::filesystem::create_directories(dir);
  EXPECT_THROW(harness::load_trace(dir), LoadError);
  const std::string fifo = testing::temp_dir() + "trace_fifo";
  ::unlink(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  ::alarm(10);  // a blocking open would end the test here instead of hanging CI
  try {
    harness::load_trace(fifo);
    ADD_FAILURE() << "a FIFO was read";
  } catch (const LoadError& e) {
    EXPECT_TRUE(contains(e.what(), "is a FIFO (named pipe), not a regular file (the trace must be one)"))
        << e.what();
  }
  ::alarm(0);
  ::unlink(fifo.c_str());
}

}  // namespace
}  // namespace nanoserve
