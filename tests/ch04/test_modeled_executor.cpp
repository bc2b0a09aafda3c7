// The roofline model on a serving run (common/harness/modeled_executor.h): a scheduler's
// output becomes the pass shape the model charges, and that charge drives the FakeExecutor's
// virtual clock (chapter 4's --executor cost-model --cost-device) or adds up beside a run.
#include <gtest/gtest.h>

#include <vector>

#include "common/engine/model/decode_graphs.h"
#include "common/engine/serve/scheduler.h"
#include "common/harness/fake_executor.h"
#include "common/harness/modeled_executor.h"
#include "common/loaders/synthetic_model.h"
#include "sched_test_support.h"

namespace nanoserve {
namespace {

using testing::req;

constexpr int kVocab = 50;

engine::SchedulerOutput two_prompts(engine::Scheduler& s) {
  engine::Request a = req(0, 9, 3);
  engine::Request b = req(1, 4, 3);
  s.add_request(a);
  s.add_request(b);
  return s.schedule();
}

TEST(Ch04ModeledExecutor, PassShapeHasOneChunkPerSequenceAndOneRowPerWastedRow) {
  engine::Scheduler s(testing::tiny_config(16, 4, 32));
  engine::SchedulerOutput out = two_prompts(s);
  out.num_wasted_rows = 2;
  const roofline::PassShape shape = harness::pass_shape(out);
  ASSERT_EQ(shape.chunks.size(), 4u);
  EXPECT_EQ(shape.chunks[0].start_pos, 0);
  EXPECT_EQ(shape.chunks[0].num_tokens, 9);
  EXPECT_TRUE(shape.chunks[0].samples);
  EXPECT_EQ(shape.chunks[1].num_tokens, 4);
  EXPECT_FALSE(shape.chunks[2].samples);  // padding: charged its linears, never sampled
  EXPECT_EQ(shape.rows(), 15);
  EXPECT_EQ(shape.sampled_rows(), 2);
}

TEST(Ch04ModeledExecutor, CostModelClockAdvancesByTheRooflineTimeOfEachPass) {
  const harness::PassTimer timer{synthetic_config("llama2-7b"), roofline::Precision::dense(2),
                                 &roofline::find_device("h200"), {}, {}};
  engine::SimulatedClock clock;
  harness::FakeCostModel cost;
  cost.pass_s = timer;
  harness::FakeExecutor fake(16, 4, kVocab, &clock, cost);
  engine::Scheduler s(testing::tiny_config(16, 4, 32));
  const engine::SchedulerOutput out = two_prompts(s);
  const double expected = roofline::pass_cost(timer.config, harness::pass_shape(out), timer.precision,
                                              *timer.device).time_s();
  (void)fake.execute(out);
  EXPECT_DOUBLE_EQ(clock.now(), expected);
  EXPECT_NE(clock.now(), 0.010 + 0.0002 * 13);  // not the fixed cost model
}

TEST(Ch04ModeledExecutor, AddsUpTheModeledTimeOfEveryPassItForwards) {
  const harness::PassTimer timer{synthetic_config("llama2-7b"), roofline::Precision::dense(4),
                                 &roofline::find_device("l4"), {}, {}};
  harness::FakeExecutor fake(16, 4, kVocab);
  harness::ModeledExecutor modeled(fake, timer);
  engine::Scheduler s(testing::tiny_config(16, 4, 32));
  const engine::SchedulerOutput first = two_prompts(s);
  const std::vector<int> tokens = modeled.execute(first);
  s.update(first, tokens, 0.0);
  const engine::SchedulerOutput second = s.schedule();  // both decode one row
  (void)modeled.execute(second);
  EXPECT_EQ(modeled.passes(), 2);
  EXPECT_DOUBLE_EQ(modeled.modeled_s(), timer(first) + timer(second));
  EXPECT_GT(timer(first), timer(second));  // 13 prompt rows cost more than 2 decode rows
}

// With the executor's CUDA graphs on, a decode step is modeled as the engine runs it: its rows
// padded to the bucket (3 → 4) and one graph launch instead of a launch per kernel; a prefill
// step still pays every launch.
TEST(Ch04ModeledExecutor, DecodeStepsWithGraphsAreModeledAsOnePaddedGraphLaunch) {
  harness::PassTimer eager{synthetic_config("llama2-7b"), roofline::Precision::dense(2),
                           &roofline::find_device("h200"), {}, {}};
  harness::PassTimer graphs = eager;
  graphs.graph_buckets = engine::cuda_graph_buckets(8);  // 1, 2, 4, 8
  harness::FakeExecutor fake(16, 4, kVocab);
  engine::Scheduler s(testing::tiny_config(16, 4, 32));
  for (int i = 0; i < 3; ++i) s.add_request(req(i, 4, 3));
  const engine::SchedulerOutput prefill = s.schedule();
  s.update(prefill, fake.execute(prefill), 0.0);
  const engine::SchedulerOutput decode = s.schedule();
  ASSERT_EQ(harness::pass_shape(decode).rows(), 3);
  EXPECT_DOUBLE_EQ(graphs(prefill), eager(prefill));
  roofline::PassShape padded = harness::pass_shape(decode);
  padded.chunks.push_back({0, 1, false});
  roofline::Assumptions as_graph;
  as_graph.cuda_graph = true;
  EXPECT_DOUBLE_EQ(graphs(decode),
                   roofline::pass_cost(graphs.config, padded, graphs.precision, *graphs.device,
                                       as_graph).time_s());
  EXPECT_DOUBLE_EQ(eager(decode), roofline::pass_cost(eager.config, harness::pass_shape(decode),
                                                      eager.precision, *eager.device).time_s());
  EXPECT_LT(graphs(decode), eager(decode));  // 4 + 8L launches cost more than one graph
}

}  // namespace
}  // namespace nanoserve
