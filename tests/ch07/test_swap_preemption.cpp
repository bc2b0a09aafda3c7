// Swap preemption beside recompute (chapter 7): block tables moved to the host pool and back
// with the sharing of a request's samples kept (exact ids), the scheduler's swapped queue and
// vLLM v0's policy, and — forced both ways on the fake model and on the real one — the same
// tokens as solo runs, with every block accounted for across the device pool, the host pool
// and the requests after every step.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "ch01/engine_test_support.h"
#include "ch04/model_test_support.h"
#include "ch04/sched_test_support.h"
#include "ch07/stack_test_support.h"
#include "common/engine/serve/model_executor.h"
#include "common/engine/serve/serving_loop.h"
#include "common/error.h"
#include "common/harness/fake_executor.h"

namespace nanoserve::engine {
namespace {

using Ids = std::vector<int>;
using nanoserve::testing::tiny_config;

Sequence make_seq(int64_t id, Ids tokens) {
  Sequence s;
  s.seq_id = id;
  s.token_ids = std::move(tokens);
  return s;
}

TEST(Ch07KVSwap, SwapOutKeepsTheSharingOfForkedSamplesAndSwapInRestoresIt) {
  KVCacheManager kv(8, 4, /*enable_prefix_caching=*/true, &xxh3_block_hash, /*host=*/4);
  const Sequence a = make_seq(1, {1, 2, 3, 4, 5, 6});
  kv.allocate(a);  // [1 2 3 4]* (block 0), [5 6 _ _] (block 1)
  kv.fork(1, 2);   // sample 2 shares both
  Sequence b = make_seq(2, {1, 2, 3, 4, 5, 6, 9});
  EXPECT_EQ(kv.append_slot(b), (std::vector<BlockCopy>{{1, 2}}));  // b: [0, 2]
  EXPECT_EQ(kv.num_host_blocks_to_swap_out({1, 2}), 3);
  const std::vector<BlockSwap> out = kv.swap_out({1, 2});
  // Block 0 once (shared), then 1 and 2: host blocks 0, 1, 2; host block 0 held twice.
  EXPECT_EQ(out, (std::vector<BlockSwap>{{0, 0}, {1, 1}, {2, 2}}));
  EXPECT_EQ(kv.swapped_table(1).block_ids(), (Ids{0, 1}));
  EXPECT_EQ(kv.swapped_table(2).block_ids(), (Ids{0, 2}));
  EXPECT_EQ(kv.host_pool().ref_cnt(0), 2);
  EXPECT_EQ(kv.pool().num_free_blocks(), 8);
  EXPECT_TRUE(kv.pool().block(0).cached) << "freed, still cached: others may hit it";
  EXPECT_EQ(kv.check_invariants(), "");

  // Something else takes the first free blocks meanwhile.
  kv.allocate(make_seq(3, {7, 7, 7}));  // block 3 (the queue's head)
  EXPECT_EQ(kv.num_blocks_to_swap_in({1, 2}), 3);
  const std::vector<BlockSwap> in = kv.swap_in({&a, &b});
  EXPECT_EQ(in, (std::vector<BlockSwap>{{4, 0}, {5, 1}, {6, 2}}));
  EXPECT_EQ(kv.block_table(1).block_ids(), (Ids{4, 5}));
  EXPECT_EQ(kv.block_table(2).block_ids(), (Ids{4, 6}));
  EXPECT_EQ(kv.pool().block(4).ref_cnt, 2);
  EXPECT_TRUE(kv.pool().block(4).cached) << "its full block is cached again";
  EXPECT_EQ(kv.host_pool().num_free_blocks(), 4);
  EXPECT_EQ(kv.num_swapped(), 0);
  EXPECT_EQ(kv.check_invariants(), "");
}

TEST(Ch07KVSwap, AFullHostPoolRefusesAndChangesNothing) {
  KVCacheManager kv(8, 2, false, &xxh3_block_hash, /*host=*/1);
  kv.allocate(make_seq(1, {1, 2, 3}));  // 2 blocks
  EXPECT_THROW(kv.swap_out({1}), BlockPoolExhausted);
  EXPECT_TRUE(kv.contains(1));
  EXPECT_EQ(kv.pool().num_free_blocks(), 6);
  EXPECT_EQ(kv.check_invariants(), "");
}

/// Every block accounted for: device blocks in use are exactly those the running tables hold,
/// host blocks in use exactly those the swapped tables hold, and the two pools add up.
void expect_blocks_conserved(const Scheduler& s) {
  const KVCacheManager& kv = s.kv();
  std::set<int> device, host;
  for (int64_t id : s.running_ids()) {
    for (int b : kv.block_table(id).block_ids()) device.insert(b);
  }
  for (int64_t id : s.swapped_ids()) {
    for (int h : kv.swapped_table(id).block_ids()) host.insert(h);
  }
  EXPECT_EQ(int(device.size()), kv.pool().num_used_blocks());
  EXPECT_EQ(int(host.size()), kv.host_pool().num_blocks() - kv.host_pool().num_free_blocks());
  EXPECT_EQ(kv.pool().num_used_blocks() + kv.pool().num_free_blocks(), kv.pool().num_blocks());
}

/// Runs `requests` step by step on the fake model; returns the finished requests and counts
/// swaps and recomputations.
std::vector<Request> run_fake(const SchedulerConfig& c, const std::vector<Request>& requests,
                              long long* swaps, long long* preemptions) {
  Scheduler s(c);
  for (const Request& r : requests) s.add_request(r);
  harness::FakeExecutor ex(c.num_kv_blocks, c.block_size, 40);
  std::vector<Request> done;
  for (int t = 0; s.has_unfinished() && t < 1000; ++t) {
    nanoserve::testing::spec_step(s, ex, nullptr, t);
    expect_blocks_conserved(s);
    for (Request& r : s.take_finished()) done.push_back(std::move(r));
  }
  EXPECT_FALSE(s.has_unfinished());
  EXPECT_EQ(s.kv().pool().num_free_blocks(), c.num_kv_blocks);
  EXPECT_EQ(s.kv().host_pool().num_free_blocks(), c.num_host_blocks);
  *swaps = s.stats().num_swap_outs;
  *preemptions = s.stats().num_preemptions;
  return done;
}

TEST(Ch07SwapPreemption, ForcedEitherWayTheTokensAreTheSoloOnes) {
  std::vector<Request> requests;
  for (int i = 0; i < 4; ++i) {
    Request r = nanoserve::testing::req(i, 5 + i, 12);
    r.seq.sampling = SamplingParams{i % 2 ? 1.0f : 0.0f};
    r.seq.sampling.seed = 9 + std::uint64_t(i);
    r.n = i == 3 ? 2 : 1;  // and a group of samples
    requests.push_back(r);
  }
  for (PreemptionMode mode : {PreemptionMode::kRecompute, PreemptionMode::kSwap, PreemptionMode::kAuto}) {
    SCOPED_TRACE(to_string(mode));
    // 18 blocks of 2: each request fits alone (the two samples of request 3 with their
    // shared prompt too), all four together do not.
    SchedulerConfig c = tiny_config(/*blocks=*/18, /*block_size=*/2, /*budget=*/16);
    c.preemption_mode = mode;
    c.num_host_blocks = 16;
    long long swaps = 0, preemptions = 0;
    const std::vector<Request> done = run_fake(c, requests, &swaps, &preemptions);
    ASSERT_EQ(done.size(), 5u);
    for (const Request& r : done) {
      Request alone = requests[std::size_t(r.group_id())];
      alone.n = 1;
      alone.seq.sampling.seed += std::uint64_t(r.sample_index);
      EXPECT_EQ(r.seq.token_ids, harness::fake_reference_run(alone, 40, 64).seq.token_ids)
          << r.id();
    }
    EXPECT_GT(preemptions, 0);
    if (mode == PreemptionMode::kRecompute) {
      EXPECT_EQ(swaps, 0);
    } else if (mode == PreemptionMode::kSwap) {
      EXPECT_EQ(swaps, preemptions);
    } else {
      EXPECT_LT(swaps, preemptions);  // v0's rule: single sequences recompute
    }
  }
}

TEST(Ch07SwapPreemption, SwappedRequestsComeBackBeforeNewOnesAndWithoutRecomputing) {
  // 6 blocks of 2: A (prompt 5) and B (prompt 5) fill 6 blocks once they decode a little.
  SchedulerConfig c = tiny_config(6, 2, 16);
  c.preemption_mode = PreemptionMode::kSwap;
  c.num_host_blocks = 8;
  Scheduler s(c);
  s.add_request(nanoserve::testing::req(0, 5, 8));
  s.add_request(nanoserve::testing::req(1, 5, 8));
  harness::FakeExecutor ex(6, 2, 40);
  SchedulerOutput out;
  for (int t = 0; t < 10 && out.blocks_to_swap_out.empty(); ++t) {
    out = nanoserve::testing::spec_step(s, ex, nullptr, t);
  }
  ASSERT_FALSE(out.blocks_to_swap_out.empty()) << "the pool should run out";
  EXPECT_EQ(s.swapped_ids(), (std::vector<int64_t>{1}));  // the newest
  const int computed = s.request(1).seq.num_computed_tokens;
  EXPECT_EQ(s.kv().swapped_table(1).num_tokens(), computed);
  s.add_request(nanoserve::testing::req(2, 3, 2));  // arrives while 1 is out: waits behind it
  for (int t = 0; t < 40 && s.request(1).status == RequestStatus::kSwapped; ++t) {
    out = nanoserve::testing::spec_step(s, ex, nullptr, t);
    if (s.request(1).status == RequestStatus::kSwapped) {
      EXPECT_NE(s.request(2).status, RequestStatus::kRunning) << "admitted before 1 came back";
    }
  }
  ASSERT_EQ(s.request(1).status, RequestStatus::kRunning);
  ASSERT_FALSE(out.blocks_to_swap_in.empty());
  // Back with its KV: it goes on from where it stopped (no prefill rows).
  EXPECT_EQ(s.request(1).seq.num_computed_tokens, computed + 1);
}

TEST(Ch07SwapPreemption, ConfigErrorsNameTheField) {
  SchedulerConfig c = tiny_config(8, 2, 8);
  c.preemption_mode = PreemptionMode::kSwap;
  EXPECT_THROW(Scheduler{c}, InvalidArgument);  // swap without a host pool
  c.num_host_blocks = -1;
  EXPECT_THROW(Scheduler{c}, InvalidArgument);
  EXPECT_THROW(parse_preemption_mode("evict"), InvalidArgument);
  EXPECT_EQ(parse_preemption_mode("swap"), PreemptionMode::kSwap);
}

// The real model: a pool small enough to preempt, forced to swap, then to recompute — the
// blocks copied to pinned host memory and back give the same tokens as solo runs.
TEST(Ch07SwapPreemption, TheModelsTokensSurviveTheRoundTripThroughTheHostPool) {
  NANOSERVE_REQUIRE_DEVICE();
  const Model host = nanoserve::testing::micro_model(31, 2);
  const DeviceModel model(host, DType::kF32);
  std::vector<Request> requests = nanoserve::testing::model_workload(8, 5, 24, 12, 10);
  for (Request& r : requests) {
    r.stop_token_ids.clear();
    r.max_tokens = 10;
  }
  requests[2].n = 2;
  std::vector<Request> singles = requests;  // with request 2's second sample alone at the end
  singles[2].n = 1;
  Request second = singles[2];
  second.seq.seq_id = int64_t(singles.size());
  second.seq.sampling.seed += 1;
  singles.push_back(second);
  const std::vector<std::vector<int>> solo = nanoserve::testing::solo_tokens(model, singles, 48);
  for (PreemptionMode mode : {PreemptionMode::kSwap, PreemptionMode::kRecompute}) {
    SCOPED_TRACE(to_string(mode));
    SchedulerConfig c = tiny_config(/*blocks=*/9, /*block_size=*/4, /*budget=*/16,
                                    /*max_num_seqs=*/4, /*max_model_len=*/48);
    c.preemption_mode = mode;
    c.num_host_blocks = 24;
    ModelExecutor executor(model, executor_options_for(c));
    SimulatedClock clock;
    const ServingRun run = run_continuous(requests, c, executor, clock);
    ASSERT_EQ(run.requests.size(), 6u);
    for (const Request& r : run.requests) {
      const std::size_t k = r.sample_index == 0 ? std::size_t(r.group_id()) : singles.size() - 1;
      EXPECT_EQ(r.seq.token_ids, solo[k]) << "request " << r.group_id() << " sample " << r.sample_index;
    }
    EXPECT_GT(run.num_preemptions, 0);
    if (mode == PreemptionMode::kSwap) {
      EXPECT_EQ(run.num_swap_outs, run.num_preemptions);
      EXPECT_EQ(executor.stats().blocks_swapped_in, executor.stats().blocks_swapped_out);
    }
  }
}

}  // namespace
}  // namespace nanoserve::engine
