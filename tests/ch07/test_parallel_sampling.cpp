// Parallel sampling inside the continuous-batching scheduler (chapter 7): a request with n
// samples is forked copy-on-write when its prompt is done, and its samples are scheduled,
// preempted and finished as one group — with exact block ids and reference counts, and every
// sample's tokens equal to a solo run with its own seed (the fake model, then the real one).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ch01/engine_test_support.h"
#include "ch04/model_test_support.h"
#include "ch04/sched_test_support.h"
#include "ch07/stack_test_support.h"
#include "common/engine/serve/model_executor.h"
#include "common/engine/serve/serving_loop.h"
#include "common/harness/fake_executor.h"

namespace nanoserve::engine {
namespace {

using Ids = std::vector<int>;
using nanoserve::testing::describe;
using nanoserve::testing::tiny_config;

std::vector<int> ref_counts(const KVCacheManager& kv) {
  std::vector<int> out;
  for (int b = 0; b < kv.pool().num_blocks(); ++b) out.push_back(kv.pool().block(b).ref_cnt);
  return out;
}

/// Request `id` with `n` samples, seed 5, sampled.
Request group_request(int64_t id, int prompt_len, int max_tokens, int n) {
  Request r = make_request(id, nanoserve::testing::prompt_of(prompt_len, 100 + 10 * int(id)),
                           max_tokens, SamplingParams{1.0f});
  r.seq.sampling.seed = 5;
  r.n = n;
  return r;
}

/// The fake model's solo run of sample i of `r` (seed + i).
std::vector<int> solo_sample(const Request& r, int i, int max_model_len) {
  Request one = r;
  one.n = 1;
  one.seq.sampling.seed += std::uint64_t(i);
  return harness::fake_reference_run(one, 40, max_model_len).seq.token_ids;
}

TEST(Ch07ParallelSampling, ForksAfterThePromptSharesItsBlocksAndCopiesThePartialOneOnWrite) {
  Scheduler s(tiny_config(/*blocks=*/12, /*block_size=*/4, /*budget=*/16));
  s.add_request(group_request(0, 6, 2, 3));
  harness::FakeExecutor ex(12, 4, 40);
  SchedulerOutput out = s.schedule();
  // The prompt, once; its last row samples three tokens, one per sample.
  EXPECT_EQ(describe(out), "0@0+6!");
  ASSERT_EQ(out.seqs[0].forks.size(), 2u);
  EXPECT_EQ(out.num_sampled(), 3);
  const int64_t c1 = parallel_sample_id(0, 1), c2 = parallel_sample_id(0, 2);
  EXPECT_EQ(out.seqs[0].forks[0]->id(), c1);
  EXPECT_EQ(out.seqs[0].forks[1]->seq.sampling.seed, 7u);
  // Forked now: all three tables hold blocks 0 and 1 (the partial one too).
  EXPECT_EQ(ref_counts(s.kv()), (Ids{3, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(s.running_ids(), (std::vector<int64_t>{0, c1, c2}));
  EXPECT_EQ(s.check_invariants(), "");
  s.update(out, ex.execute(out));

  // Each sample decodes its own token: the first two writers copy the shared partial block
  // (to 2, then 3); the last finds itself sole owner and writes in place.
  out = s.schedule();
  EXPECT_EQ(describe(out), "0@6+1! " + std::to_string(c1) + "@6+1! " + std::to_string(c2) + "@6+1!");
  EXPECT_EQ(out.block_copies, (std::vector<BlockCopy>{{1, 2}, {1, 3}}));
  EXPECT_EQ(s.kv().block_table(0).block_ids(), (Ids{0, 2}));
  EXPECT_EQ(s.kv().block_table(c1).block_ids(), (Ids{0, 3}));
  EXPECT_EQ(s.kv().block_table(c2).block_ids(), (Ids{0, 1}));
  EXPECT_EQ(ref_counts(s.kv()), (Ids{3, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0}));
  s.update(out, ex.execute(out));

  // max_tokens 2: the group finishes together, in sample order, every block freed.
  std::vector<Request> done = s.take_finished();
  ASSERT_EQ(done.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(done[std::size_t(i)].sample_index, i);
    EXPECT_EQ(done[std::size_t(i)].seq.token_ids, solo_sample(group_request(0, 6, 2, 3), i, 64));
  }
  EXPECT_EQ(s.kv().pool().num_free_blocks(), 12);
  EXPECT_EQ(s.kv().num_sequences(), 0);
}

TEST(Ch07ParallelSampling, TheGroupWaitsForRoomForAllItsSamples) {
  Scheduler s(tiny_config(16, 4, 16, /*max_num_seqs=*/3));
  s.add_request(group_request(0, 3, 4, 1));  // an ordinary request
  s.add_request(group_request(1, 3, 4, 3));  // 3 samples: 1 + 3 > 3 seats
  SchedulerOutput out = s.schedule();
  EXPECT_EQ(describe(out), "0@0+3!");
  EXPECT_EQ(s.waiting_ids(), (std::vector<int64_t>{1}));
  harness::FakeExecutor ex(16, 4, 40);
  s.update(out, ex.execute(out));
}

TEST(Ch07ParallelSampling, AGroupIsPreemptedAndReadmittedAsOneWithItsSoloTokens) {
  // 10 blocks of 2: two groups of 3 samples cannot all grow; the newer group is preempted
  // whole (recompute), then comes back whole.
  SchedulerConfig c = tiny_config(10, 2, 32);
  c.enable_prefix_caching = true;
  Scheduler s(c);
  const Request a = group_request(0, 3, 6, 3), b = group_request(1, 3, 6, 3);
  s.add_request(a);
  s.add_request(b);
  harness::FakeExecutor ex(10, 2, 40);
  bool saw_group_preempted = false;
  for (int t = 0; s.has_unfinished() && t < 100; ++t) {
    const SchedulerOutput out = nanoserve::testing::spec_step(s, ex, nullptr);
    if (out.preempted_ids.size() >= 2) {
      saw_group_preempted = true;
      // All samples of one group, and nothing else.
      for (int64_t id : out.preempted_ids) {
        EXPECT_EQ(id < 0 ? (-1 - id) / kMaxParallelSamples : id,
                  out.preempted_ids[0] < 0 ? (-1 - out.preempted_ids[0]) / kMaxParallelSamples
                                           : out.preempted_ids[0]);
      }
    }
  }
  EXPECT_TRUE(saw_group_preempted);
  std::vector<Request> done = s.take_finished();
  ASSERT_EQ(done.size(), 6u);
  for (const Request& r : done) {
    const Request& orig = r.group_id() == 0 ? a : b;
    EXPECT_EQ(r.seq.token_ids, solo_sample(orig, r.sample_index, 64)) << r.id();
  }
  EXPECT_EQ(s.kv().pool().num_free_blocks(), 10);
}

TEST(Ch07ParallelSampling, CancellingARequestCancelsItsSamples) {
  Scheduler s(tiny_config(16, 4, 16));
  s.add_request(group_request(0, 3, 8, 3));
  harness::FakeExecutor ex(16, 4, 40);
  SchedulerOutput out = s.schedule();
  s.update(out, ex.execute(out));
  ASSERT_EQ(s.num_running(), 3);
  EXPECT_TRUE(s.cancel(0));
  const std::vector<Request> done = s.take_finished();
  ASSERT_EQ(done.size(), 3u);
  for (const Request& r : done) EXPECT_EQ(r.finish_reason, FinishReason::kCancelled);
  EXPECT_EQ(s.kv().pool().num_free_blocks(), 16);
}

TEST(Ch07ParallelSampling, BadGroupsAreRefusedOrRejected) {
  Scheduler s(tiny_config(16, 4, 16, /*max_num_seqs=*/4));
  Request too_many = group_request(0, 3, 4, kMaxParallelSamples + 1);
  EXPECT_THROW(s.add_request(too_many), InvalidArgument);
  Request negative = group_request(-5, 3, 4, 2);
  EXPECT_THROW(s.add_request(negative), InvalidArgument);
  s.add_request(group_request(1, 3, 4, 5));  // 5 samples > max_num_seqs 4: can never run
  const std::vector<Request> done = s.take_finished();
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].finish_reason, FinishReason::kRejected);
  EXPECT_NE(done[0].finish_detail.find("max_num_seqs = 4"), std::string::npos);
}

// The real model: each of the n samples equals a solo run (NaiveDecoder, generate()) with
// the corresponding seed, through chunked prefill. (With speculation a sampled request's
// tokens are distributed as the target's but not the same tokens: chapter 6.)
TEST(Ch07ParallelSampling, EverySampleOfTheModelEqualsItsSoloRunWithItsSeed) {
  NANOSERVE_REQUIRE_DEVICE();
  const Model host = nanoserve::testing::micro_model(21);
  const DeviceModel model(host, DType::kF32);
  std::vector<Request> requests;
  for (int i = 0; i < 2; ++i) {
    Request r = make_request(i, {1, 4 + i, 9, 4 + i, 9, 3}, 8, SamplingParams{0.8f});
    r.seq.sampling.seed = 100 + std::uint64_t(i);
    r.n = 3;
    requests.push_back(r);
  }
  std::vector<Request> singles;  // sample j of request i, alone
  for (const Request& r : requests) {
    for (int j = 0; j < r.n; ++j) {
      Request one = r;
      one.seq.seq_id = int64_t(singles.size());
      one.n = 1;
      one.seq.sampling.seed += std::uint64_t(j);
      singles.push_back(one);
    }
  }
  const std::vector<std::vector<int>> solo = nanoserve::testing::solo_tokens(model, singles, 48);
  SchedulerConfig c = tiny_config(40, 4, /*budget=*/4, /*max_num_seqs=*/6, /*max_model_len=*/48);
  ModelExecutor executor(model, executor_options_for(c));
  SimulatedClock clock;
  const ServingRun run = run_continuous(requests, c, executor, clock);
  ASSERT_EQ(run.requests.size(), 6u);
  for (const Request& r : run.requests) {
    const std::size_t k = std::size_t(r.group_id() * 3 + r.sample_index);
    EXPECT_EQ(r.seq.token_ids, solo[k]) << "request " << r.group_id() << " sample " << r.sample_index;
  }
}

}  // namespace
}  // namespace nanoserve::engine
