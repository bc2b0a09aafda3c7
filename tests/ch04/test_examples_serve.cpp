// Examples of use of the serving types (common/engine/serve/): requests, the continuous-
// batching scheduler and its output, the executor and clock seams, the serving loop and the
// model behind it. Each TEST is one example: the code between its `//! [Name]` markers is what
// the type's documentation shows (Doxygen \snippet), and the test asserts what the example
// claims, so the documentation cannot go stale.
#include <gtest/gtest.h>

#include <vector>

#include "common/engine/decode/naive_decoder.h"
#include "common/engine/serve/executor.h"
#include "common/engine/serve/model_executor.h"
#include "common/engine/serve/request.h"
#include "common/engine/serve/scheduler.h"
#include "common/engine/serve/scheduler_output.h"
#include "common/engine/serve/serving_loop.h"
#include "common/generation/generate.h"
#include "common/model_bundle.h"
#include "ch01/engine_test_support.h"

namespace nanoserve::engine {
namespace {

using Ids = std::vector<int>;

TEST(Ch04Examples, Request) {
  //! [Request]
  Request r = make_request(/*id=*/3, /*prompt=*/{1, 20, 30}, /*max_tokens=*/4);
  r.stop_token_ids = {2};  // EOS
  r.validate_new();
  EXPECT_EQ(r.prompt_len, 3);

  // Each sampled token is appended and the stop rules applied.
  EXPECT_FALSE(append_token(r, 17, /*now_s=*/0.5, /*max_model_len=*/256, /*detokenize=*/{}));
  EXPECT_TRUE(append_token(r, 2, /*now_s=*/0.75, 256, {}));  // the stop token: done
  EXPECT_TRUE(r.finished());
  EXPECT_EQ(r.finish_reason, FinishReason::kStop);
  EXPECT_EQ(r.output_tokens(), (Ids{17, 2}));  // the stop token is kept
  EXPECT_EQ(r.token_times_s, (std::vector<double>{0.5, 0.75}));
  //! [Request]
}

TEST(Ch04Examples, Scheduler) {
  //! [Scheduler]
  SchedulerConfig config;
  config.max_num_batched_tokens = 4;  // rows per forward pass: prompts are chunked
  config.max_model_len = 32;
  config.num_kv_blocks = 8;
  config.block_size = 4;
  Scheduler scheduler(config);
  scheduler.add_request(make_request(0, {1, 2, 3, 4, 5, 6}, /*max_tokens=*/2));

  // The executor's part (ModelExecutor: the model) is played by hand: the sampled tokens.
  SchedulerOutput step = scheduler.schedule();  // a chunk: prompt positions 0..3
  EXPECT_EQ(step.positions, (Ids{0, 1, 2, 3}));
  EXPECT_EQ(step.num_sampled(), 0);             // the prompt is not done: nothing to sample
  scheduler.update(step, {});

  step = scheduler.schedule();                   // the rest of the prompt; its last row samples
  EXPECT_EQ(step.positions, (Ids{4, 5}));
  scheduler.update(step, {42});

  step = scheduler.schedule();                   // decode: the token sampled last
  EXPECT_EQ(step.input_ids, (Ids{42}));
  EXPECT_EQ(scheduler.update(step, {43}), (std::vector<int64_t>{0}));  // max_tokens reached

  EXPECT_FALSE(scheduler.has_unfinished());
  const std::vector<Request> finished = scheduler.take_finished();
  EXPECT_EQ(finished.at(0).output_tokens(), (Ids{42, 43}));
  EXPECT_EQ(finished.at(0).finish_reason, FinishReason::kLength);
  EXPECT_EQ(scheduler.stats().num_steps, 3);
  EXPECT_EQ(scheduler.stats().num_scheduled_tokens, 4 + 2 + 1);
  EXPECT_EQ(scheduler.kv().num_sequences(), 0);  // its blocks were freed
  EXPECT_EQ(scheduler.check_invariants(), "");
  //! [Scheduler]
}

TEST(Ch04Examples, SchedulerOutput) {
  //! [SchedulerOutput]
  SchedulerConfig config;
  config.max_num_batched_tokens = 16;
  config.max_model_len = 32;
  config.num_kv_blocks = 8;
  config.block_size = 4;
  Scheduler scheduler(config);
  scheduler.add_request(make_request(0, {1, 2, 3}, /*max_tokens=*/4));
  scheduler.add_request(make_request(1, {1, 5, 6, 7, 8}, /*max_tokens=*/4));

  const SchedulerOutput out = scheduler.schedule();  // both prompts in one pass
  ASSERT_EQ(out.seqs.size(), 2u);
  const ScheduledSequence& second = out.seqs[1];
  EXPECT_EQ(second.seq_id, 1);
  EXPECT_EQ(second.row_begin, 3);  // after request 0's three rows
  EXPECT_EQ(second.start_pos, 0);
  EXPECT_EQ(second.num_tokens, 5);
  EXPECT_TRUE(second.sample);      // its whole prompt is computed: sample the next token
  EXPECT_EQ(out.num_batched_tokens(), 8);
  EXPECT_EQ(out.positions, (Ids{0, 1, 2, 0, 1, 2, 3, 4}));
  // Request 0 in block 0 (slots 0..3), request 1 in blocks 1 and 2 (slots 4..11).
  EXPECT_EQ(out.slot_mapping, (std::vector<int64_t>{0, 1, 2, 4, 5, 6, 7, 8}));
  EXPECT_EQ(out.logit_rows(), (Ids{2, 7}));
  EXPECT_TRUE(out.block_copies.empty());
  //! [SchedulerOutput]
  scheduler.update(out, {9, 9});
}

//! [Executor]
/// Samples token 7 for every sequence that samples: a stand-in for the model.
class SevensExecutor final : public Executor {
 public:
  std::vector<int> execute(const SchedulerOutput& output) override {
    ++passes;
    return std::vector<int>(static_cast<size_t>(output.num_sampled()), 7);
  }
  int passes = 0;
};

TEST(Ch04Examples, Executor) {
  SchedulerConfig config;
  config.max_model_len = 32;
  config.num_kv_blocks = 16;
  config.block_size = 4;
  std::vector<Request> workload;
  workload.push_back(make_request(0, {1, 2, 3}, /*max_tokens=*/3));
  workload.push_back(make_request(1, {1, 4}, /*max_tokens=*/2));

  SevensExecutor executor;
  SimulatedClock clock;
  const ServingRun run = run_continuous(workload, config, executor, clock);
  // Pass 1: both prompts; pass 2: both decode; pass 3: request 0 alone.
  EXPECT_EQ(executor.passes, 3);
  EXPECT_EQ(run.requests.at(0).output_tokens(), (Ids{7, 7, 7}));
  EXPECT_EQ(run.requests.at(1).output_tokens(), (Ids{7, 7}));
}
//! [Executor]

TEST(Ch04Examples, Clock) {
  //! [Clock]
  // The serving loop only asks a Clock for the time and to wait: virtual or real.
  SimulatedClock virtual_time;
  WallClock real_time;
  for (Clock* clock : {static_cast<Clock*>(&virtual_time), static_cast<Clock*>(&real_time)}) {
    const double t0 = clock->now();
    clock->wait_until(t0 + 0.001);
    EXPECT_GE(clock->now(), t0 + 0.001);
  }
  //! [Clock]
}

TEST(Ch04Examples, SimulatedClock) {
  //! [SimulatedClock]
  SimulatedClock clock(/*start_s=*/10);
  clock.advance(0.5);      // an executor's cost model: this pass took 0.5 s
  EXPECT_EQ(clock.now(), 10.5);
  clock.wait_until(10.2);  // in the past: nothing happens
  EXPECT_EQ(clock.now(), 10.5);
  clock.wait_until(12);    // idle until the next arrival, instantly
  EXPECT_EQ(clock.now(), 12);
  //! [SimulatedClock]
}

TEST(Ch04Examples, WallClock) {
  //! [WallClock]
  WallClock clock;  // starts at 0
  const double t0 = clock.now();
  EXPECT_GE(t0, 0.0);
  clock.wait_until(t0 + 0.002);  // sleeps about 2 ms
  EXPECT_GE(clock.now(), t0 + 0.002);
  //! [WallClock]
}

/// Samples token 7 and charges 0.1 s of virtual time per forward pass (a cost model's shape).
class TimedSevens final : public Executor {
 public:
  explicit TimedSevens(SimulatedClock& clock) : clock_(clock) {}
  std::vector<int> execute(const SchedulerOutput& output) override {
    clock_.advance(0.1);
    return std::vector<int>(static_cast<size_t>(output.num_sampled()), 7);
  }

 private:
  SimulatedClock& clock_;
};

TEST(Ch04Examples, ServingRun) {
  //! [ServingRun]
  SchedulerConfig config;
  config.max_model_len = 32;
  config.num_kv_blocks = 16;
  config.block_size = 4;
  std::vector<Request> workload;
  workload.push_back(make_request(0, {1, 2, 3}, /*max_tokens=*/2, {}, /*arrival_s=*/0.0));
  workload.push_back(make_request(1, {1, 4}, /*max_tokens=*/1, {}, /*arrival_s=*/1.0));

  SimulatedClock clock;
  TimedSevens executor(clock);  // each pass takes 0.1 s
  const ServingRun run = run_continuous(workload, config, executor, clock);

  // t = 0.1: request 0's prompt; 0.2: its decode (done); idle until 1.0; 1.1: request 1.
  ASSERT_EQ(run.steps.size(), 3u);
  const StepSample& first = run.steps[0];
  EXPECT_DOUBLE_EQ(first.time_s, 0.1);
  EXPECT_EQ(first.num_batched_tokens, 3);
  EXPECT_EQ(first.num_running, 1);
  EXPECT_DOUBLE_EQ(run.steps[2].time_s, 1.1);
  EXPECT_EQ(run.steps[2].num_batched_tokens, 2);
  EXPECT_DOUBLE_EQ(run.requests.at(0).finished_s, 0.2);
  EXPECT_DOUBLE_EQ(run.end_s, 1.1);
  EXPECT_EQ(run.num_preemptions, 0);
  //! [ServingRun]
}

TEST(Ch04Examples, ModelExecutor) {
  NANOSERVE_REQUIRE_DEVICE();
  const Model model = load_model_bundle("synthetic:tiny").model;  // 4 layers, vocabulary 512
  //! [ModelExecutor]
  SchedulerConfig config;
  config.max_num_batched_tokens = 32;
  config.max_model_len = 64;
  config.num_kv_blocks = 32;
  config.block_size = 4;
  const DeviceModel device(model, DType::kF32);
  ModelExecutor executor(device, executor_options_for(config));  // pools of the same 32 blocks
  EXPECT_EQ(executor.options().num_kv_blocks, 32);

  SamplingParams greedy;
  greedy.temperature = 0.0f;
  std::vector<Request> workload;
  workload.push_back(make_request(0, {1, 20, 30}, /*max_tokens=*/6, greedy));
  workload.push_back(make_request(1, {1, 20, 30, 40, 50}, /*max_tokens=*/4, greedy));
  SimulatedClock clock;
  const ServingRun run = run_continuous(workload, config, executor, clock);

  // Batched together, each request gets the tokens it gets running alone.
  NaiveDecoder alone(device, CacheMode::kNaiveCache);
  for (const Request& r : run.requests) {
    GenerateOptions solo;
    solo.max_new_tokens = r.max_tokens;
    solo.sampling = greedy;
    alone.reset();
    const Ids prompt(r.seq.token_ids.begin(), r.seq.token_ids.begin() + r.prompt_len);
    EXPECT_EQ(r.seq.token_ids, generate(alone, prompt, solo).tokens) << "request " << r.id();
  }
  //! [ModelExecutor]
  EXPECT_GT(executor.counters().passes, 0);
}

}  // namespace
}  // namespace nanoserve::engine
