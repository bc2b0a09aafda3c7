// Disaggregated prefill and decode under `mpirun -np 2` (one prefill instance) and `-np 4`
// (three), on the tiny synthetic model through the kernels (the simulator): every request's
// tokens equal the colocated engine's (chunked prefill, one process), blocks are conserved on
// both sides, and a decode instance short of blocks back-pressures the prefill instances
// instead of dropping requests.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "common/engine/disagg/disaggregated.h"
#include "common/loaders/synthetic_model.h"
#include "tests/ch04/model_test_support.h"
#include "tests/ch09/mpi/mpi_test_support.h"

namespace nanoserve::engine {
namespace {

using testing::world;

constexpr int kMaxModelLen = 32;

SchedulerConfig role_config(int blocks, int budget) {
  SchedulerConfig c;
  c.num_kv_blocks = blocks;
  c.block_size = 4;
  c.max_model_len = kMaxModelLen;
  c.max_num_batched_tokens = budget;
  c.max_num_seqs = 8;
  return c;
}

struct Outcome {
  ServingRun run;
  DisaggStats stats;
};

class Ch09Disaggregated : public ::testing::Test {
 protected:
  Ch09Disaggregated()
      : model_(make_synthetic_model("tiny")), device_(model_, DType::kF32) {}

  // The same run on every rank; the decode rank's result carries the requests.
  Outcome run_disaggregated_here(const std::vector<Request>& workload, const DisaggConfig& c) {
    dist::Communicator& comm = world();
    ModelExecutor executor(device_, executor_options_for(c.role(comm.rank())));
    SimulatedClock clock;
    Outcome o;
    o.run = run_disaggregated(workload, c, executor, comm, clock, &o.stats);
    return o;
  }
  // The colocated engine: one scheduler, chunked prefill, the same model.
  ServingRun run_colocated(const std::vector<Request>& workload) {
    const SchedulerConfig c = role_config(64, 16);
    ModelExecutor executor(device_, executor_options_for(c));
    SimulatedClock clock;
    return run_continuous(workload, c, executor, clock);
  }
  // On the decode rank: each request's tokens equal the colocated run's, and all finished
  // normally. Everywhere: no block left in use; the blocks sent add up to the blocks received.
  void expect_same_as_colocated(const std::vector<Request>& workload, const DisaggConfig& c,
                                const Outcome& o) {
    dist::Communicator& comm = world();
    EXPECT_EQ(o.stats.kv_blocks_used_at_end, 0) << "rank " << comm.rank();
    std::vector<std::int64_t> sums{0, 0, 0, 0};  // blocks sent, received, handoffs sent, received
    const bool decode = comm.rank() == c.decode_rank;
    sums[decode ? 1 : 0] = o.stats.blocks;
    sums[decode ? 3 : 2] = o.stats.handoffs;
    comm.all_reduce(sums.data(), 4, dist::DataType::kI64, dist::ReduceOp::kSum, nullptr);
    EXPECT_EQ(sums[0], sums[1]) << "KV blocks sent vs received";
    EXPECT_EQ(sums[2], sums[3]) << "hand-offs sent vs received";
    if (!decode) return;
    const ServingRun colocated = run_colocated(workload);
    ASSERT_EQ(o.run.requests.size(), workload.size());
    for (std::size_t i = 0; i < workload.size(); ++i) {
      const Request& got = o.run.requests[i];
      const Request& want = colocated.requests[i];
      ASSERT_EQ(got.id(), want.id());
      EXPECT_TRUE(got.finish_reason == FinishReason::kStop ||
                  got.finish_reason == FinishReason::kLength)
          << "request " << got.id() << ": " << to_string(got.finish_reason) << " "
          << got.finish_detail;
      EXPECT_EQ(got.output_tokens(), want.output_tokens())
          << "request " << got.id() << " (" << (got.seq.sampling.greedy() ? "greedy" : "sampled")
          << ", prompt " << got.prompt_len << ", preempted " << got.num_preemptions
          << "x, prefix hit " << got.num_prefix_hit_tokens << ")";
      EXPECT_EQ(got.seq.token_ids, want.seq.token_ids) << "request " << got.id();
      EXPECT_EQ(got.finish_reason, want.finish_reason) << "request " << got.id();
    }
  }

  Model model_;
  DeviceModel device_;
};

TEST_F(Ch09Disaggregated, EveryRequestsTokensEqualTheColocatedEnginesAndBlocksAreConserved) {
  const std::vector<Request> workload =
      testing::model_workload(11, 6, model_.config.vocab_size, 26, 6);
  DisaggConfig c;
  c.prefill = role_config(40, 32);
  c.decode = role_config(64, 32);
  c.check_invariants = true;
  const Outcome o = run_disaggregated_here(workload, c);
  expect_same_as_colocated(workload, c, o);
  if (world().rank() == c.decode_rank) {
    EXPECT_GT(o.stats.handoffs, 0);
    EXPECT_GT(o.stats.bytes, 0);
    EXPECT_FALSE(o.run.steps.empty());
  }
}

TEST_F(Ch09Disaggregated, ADecodeInstanceOutOfBlocksBackPressuresPrefillAndDropsNothing) {
  // Each pool holds one request of max_model_len (8 blocks of 4) and every prompt needs 5 or 6
  // blocks, so one request at a time fits anywhere: the decode instance defers adoptions while
  // it decodes (6 tokens each), the prefill instances' sends stay in flight holding their
  // blocks, and they stall — yet every request finishes with the colocated tokens.
  std::vector<Request> workload;
  for (int id = 0; id < 5; ++id) {
    std::vector<int> prompt{1};
    for (int i = 1; i < 18 + id % 4; ++i) prompt.push_back(3 + (id * 37 + i * 11) % 500);
    SamplingParams sampling;
    sampling.temperature = id % 2 == 0 ? 0.0f : 0.9f;
    sampling.seed = 100 + static_cast<std::uint64_t>(id);
    workload.push_back(make_request(id, prompt, 6, sampling));
  }
  DisaggConfig c;
  c.prefill = role_config(8, 32);
  c.decode = role_config(8, 32);
  c.check_invariants = true;
  const Outcome o = run_disaggregated_here(workload, c);
  expect_same_as_colocated(workload, c, o);
  std::vector<std::int64_t> pressure{o.stats.deferred_adoptions, o.stats.prefill_stalls};
  world().all_reduce(pressure.data(), 2, dist::DataType::kI64, dist::ReduceOp::kSum, nullptr);
  EXPECT_GT(pressure[0], 0) << "the decode instance never waited for blocks";
  EXPECT_GT(pressure[1], 0) << "no prefill instance ever waited for its sends";
}

}  // namespace
}  // namespace nanoserve::engine
