// The scheduler's host cost with hundreds of running sequences: runs, exercises what it
// claims, and prints µs per step (informational: no timing is asserted).
#include <gtest/gtest.h>

#include <cstdio>

#include "common/harness/scheduler_bench.h"
#include "common/error.h"

namespace nanoserve {
namespace {

TEST(Ch04SchedulerBench, TimesDecodeStepsOfEveryRunningSequence) {
  for (int num_seqs : {64, 256, 512}) {
    harness::SchedulerBenchOptions o;
    o.num_seqs = num_seqs;
    o.decode_steps = 64;
    const harness::SchedulerBenchResult r = harness::bench_scheduler(o);
    EXPECT_EQ(r.num_seqs, num_seqs);
    EXPECT_EQ(r.steps, 63);  // the first token comes from the untimed prefill step
    EXPECT_GT(r.schedule_us, 0.0);
    EXPECT_GT(r.update_us, 0.0);
    std::printf("scheduler, %3d running sequences: schedule %7.1f us + update %6.1f us per "
                "step = %4.0f ns per sequence\n",
                num_seqs, r.schedule_us, r.update_us, r.ns_per_seq());
  }
}

TEST(Ch04SchedulerBench, RejectsTooFewDecodeSteps) {
  harness::SchedulerBenchOptions o;
  o.decode_steps = 1;
  EXPECT_THROW(harness::bench_scheduler(o), InvalidArgument);
}

}  // namespace
}  // namespace nanoserve
