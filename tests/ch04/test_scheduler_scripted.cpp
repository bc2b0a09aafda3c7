// Scheduler: small scripted scenarios with every step's plan written out by hand.
// Notation of describe(): "id@start+n" = request id computes positions start..start+n-1;
// "!" = the step samples its next token.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/error.h"
#include "sched_test_support.h"

namespace nanoserve {
namespace {

using testing::describe;
using testing::req;
using testing::step;
using testing::tiny_config;
using Ids = std::vector<int64_t>;

TEST(Ch04Scheduler, ChunkedPrefillSplitsALongPromptOverSteps) {
  engine::Scheduler s(tiny_config(16, 4, /*budget=*/8));
  s.add_request(req(0, 20, 3));
  EXPECT_EQ(step(s), "0@0+8");     // no token: the prompt is not done
  EXPECT_EQ(step(s), "0@8+8");
  EXPECT_EQ(step(s), "0@16+4!");   // the last chunk samples token 1 (position 20)
  EXPECT_EQ(step(s), "0@20+1!");
  EXPECT_EQ(step(s), "0@21+1!");   // token 3 = max_tokens
  EXPECT_FALSE(s.has_unfinished());
  const std::vector<engine::Request> done = s.take_finished();
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].num_output_tokens(), 3);
  EXPECT_EQ(done[0].finish_reason, engine::FinishReason::kLength);
  EXPECT_EQ(s.kv().pool().num_free_blocks(), 16);
}

TEST(Ch04Scheduler, RunningDecodesComeFirstAndAPrefillChunkTakesTheRestOfTheBudget) {
  engine::Scheduler s(tiny_config(16, 4, /*budget=*/8));
  s.add_request(req(0, 3, 4));
  EXPECT_EQ(step(s), "0@0+3!");
  s.add_request(req(1, 12, 2));
  EXPECT_EQ(step(s), "0@3+1! 1@0+7");   // 1 decode row + 7 prompt rows = the budget
  EXPECT_EQ(step(s), "0@4+1! 1@7+5!");
  EXPECT_EQ(step(s), "0@5+1! 1@12+1!");
  EXPECT_FALSE(s.has_unfinished());
}

TEST(Ch04Scheduler, MaxNumSeqsHoldsTheThirdRequestBackUntilASlotFrees) {
  engine::Scheduler s(tiny_config(16, 4, 64, /*max_num_seqs=*/2));
  s.add_request(req(0, 2, 2));
  s.add_request(req(1, 2, 3));
  s.add_request(req(2, 2, 1));
  EXPECT_EQ(step(s), "0@0+2! 1@0+2!");
  EXPECT_EQ(s.waiting_ids(), Ids{2});
  EXPECT_EQ(step(s), "0@2+1! 1@2+1!");  // request 0 finishes here
  EXPECT_EQ(step(s), "1@3+1! 2@0+2!");
  EXPECT_FALSE(s.has_unfinished());
}

TEST(Ch04Scheduler, WithoutChunkingAPromptWaitsForRoomForAllOfItAndNobodyOvertakesIt) {
  engine::SchedulerConfig c = tiny_config(16, 4, /*budget=*/10, 8, /*max_model_len=*/10);
  c.enable_chunked_prefill = false;
  engine::Scheduler s(c);
  s.add_request(req(0, 4, 5));
  s.add_request(req(1, 8, 1));
  s.add_request(req(2, 2, 1));
  EXPECT_EQ(step(s), "0@0+4!");          // 8 > 6 rows left: request 1 waits, and so does 2
  EXPECT_EQ(step(s), "0@4+1! 1@0+8!");   // 2 > the 1 row left
  EXPECT_EQ(step(s), "0@5+1! 2@0+2!");
}

TEST(Ch04Scheduler, WithChunkingTheSameRequestsShareTheFirstStep) {
  engine::Scheduler s(tiny_config(16, 4, /*budget=*/10, 8, /*max_model_len=*/10));
  s.add_request(req(0, 4, 5));
  s.add_request(req(1, 8, 1));
  s.add_request(req(2, 2, 1));
  EXPECT_EQ(step(s), "0@0+4! 1@0+6");
  EXPECT_EQ(step(s), "0@4+1! 1@6+2! 2@0+2!");
}

TEST(Ch04Scheduler, ConfigWithoutChunkingRejectsABudgetBelowTheContext) {
  engine::SchedulerConfig c = tiny_config(16, 4, /*budget=*/8, 8, /*max_model_len=*/9);
  c.enable_chunked_prefill = false;
  try {
    engine::Scheduler s(c);
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("max_num_batched_tokens = 8"), std::string::npos);
  }
  c.max_num_seqs = 0;
  c.enable_chunked_prefill = true;
  EXPECT_THROW(engine::Scheduler{c}, InvalidArgument);
}

// 5 blocks of 4 tokens, prefix caching off. Blocks after step 2: A 2, B 2, C 1 — the pool
// is full, so every new block from step 3 on must come from a preemption.
TEST(Ch04Scheduler, PreemptsTheNewestRequestAndRequeuesItAtTheFront) {
  engine::Scheduler s(tiny_config(5, 4, 32));
  s.add_request(req(0, 7, 6));  // A
  s.add_request(req(1, 6, 8));  // B
  s.add_request(req(2, 3, 8));  // C
  auto plan = [&](Ids* preempted) {
    const engine::SchedulerOutput out = s.schedule();
    EXPECT_EQ(s.check_invariants(), "");
    *preempted = out.preempted_ids;
    s.update(out, std::vector<int>(size_t(out.num_sampled()), 7));
    EXPECT_EQ(s.check_invariants(), "");
    return describe(out);
  };
  Ids pre;
  EXPECT_EQ(plan(&pre), "0@0+7! 1@0+6! 2@0+3!");
  EXPECT_EQ(plan(&pre), "0@7+1! 1@6+1! 2@3+1!");
  // A needs a third block: C, the most recently admitted, is preempted.
  EXPECT_EQ(plan(&pre), "0@8+1! 1@7+1!");
  EXPECT_EQ(pre, Ids{2});
  EXPECT_EQ(s.request(2).status, engine::RequestStatus::kPreempted);
  EXPECT_EQ(s.request(2).seq.num_computed_tokens, 0);
  EXPECT_EQ(s.request(2).num_output_tokens(), 2);  // its tokens survive; only its KV is gone
  // B needs a third block and is itself the newest: it yields, and goes in front of C.
  EXPECT_EQ(plan(&pre), "0@9+1!");
  EXPECT_EQ(pre, Ids{1});
  EXPECT_EQ(s.waiting_ids(), (Ids{1, 2}));
  // B's 6 + 3 tokens need 3 blocks, 2 are free: it waits, and C may not overtake it.
  EXPECT_EQ(plan(&pre), "0@10+1!");
  EXPECT_EQ(plan(&pre), "0@11+1!");  // A's 6th token: it finishes and frees 3 blocks
  // Both recompute their KV from position 0, generated tokens included.
  EXPECT_EQ(plan(&pre), "1@0+9! 2@0+5!");
  EXPECT_EQ(plan(&pre), "1@9+1! 2@5+1!");
  EXPECT_EQ(s.stats().num_preemptions, 2);
  EXPECT_EQ(s.request(1).num_preemptions, 1);
  EXPECT_EQ(s.request(2).num_preemptions, 1);
}

// The same scenario with prefix caching: B's freed blocks are still cached when it comes
// back, so it recomputes one token instead of nine; C's block was evicted (A took it).
TEST(Ch04Scheduler, APreemptedRequestRecomputesOnlyWhatThePrefixCacheLost) {
  engine::SchedulerConfig c = tiny_config(5, 4, 32);
  c.enable_prefix_caching = true;
  engine::Scheduler s(c);
  s.add_request(req(0, 7, 6));
  s.add_request(req(1, 6, 8));
  s.add_request(req(2, 3, 8));
  for (int i = 0; i < 6; ++i) step(s);
  EXPECT_EQ(s.waiting_ids(), (Ids{1, 2}));
  EXPECT_EQ(step(s), "1@8+1! 2@0+5!");
  EXPECT_EQ(s.kv().metrics().prefill_tokens_skipped, 8);
  EXPECT_EQ(s.request(1).num_prefix_hit_tokens, 0);  // counted at the first admission only
}

TEST(Ch04Scheduler, RejectsRequestsThatCanNeverFitWithAReasonAndServesTheRest) {
  engine::Scheduler s(tiny_config(3, 4, 32, 8, /*max_model_len=*/16));
  s.add_request(req(0, 17, 1));  // longer than the context
  s.add_request(req(1, 13, 1));  // 4 blocks > the pool's 3
  s.add_request(req(2, 5, 1));
  const std::vector<engine::Request> rejected = s.take_finished();
  ASSERT_EQ(rejected.size(), 2u);
  EXPECT_EQ(rejected[0].finish_reason, engine::FinishReason::kRejected);
  EXPECT_EQ(rejected[0].finish_detail,
            "prompt of 17 tokens is longer than the context (max_model_len = 16)");
  EXPECT_EQ(rejected[1].finish_detail,
            "prompt of 13 tokens needs 4 KV blocks but the whole pool has 3");
  EXPECT_EQ(s.stats().num_rejected, 2);
  EXPECT_EQ(step(s), "2@0+5!");
}

TEST(Ch04Scheduler, ARequestThatOutgrowsTheWholePoolStopsForCapacity) {
  engine::Scheduler s(tiny_config(2, 4, 32));  // 8 slots
  s.add_request(req(0, 6, 10));
  EXPECT_EQ(step(s), "0@0+6!");
  EXPECT_EQ(step(s), "0@6+1!");
  EXPECT_EQ(step(s), "0@7+1!");  // 9 tokens; the 9th would need slot 8
  s.add_request(req(1, 3, 1));
  EXPECT_EQ(step(s), "1@0+3!");  // request 0 ends while planning; request 1 takes the pool
  const std::vector<engine::Request> done = s.take_finished();
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[0].id(), 0);
  EXPECT_EQ(done[0].finish_reason, engine::FinishReason::kLength);
  EXPECT_EQ(done[0].finish_detail, "KV cache capacity: the pool's 2 blocks hold 8 tokens");
  EXPECT_EQ(done[0].num_output_tokens(), 3);
}

TEST(Ch04Scheduler, CancelRemovesWaitingAndRunningRequestsAndFreesTheirBlocks) {
  engine::Scheduler s(tiny_config(8, 4, 32, /*max_num_seqs=*/1));
  s.add_request(req(0, 5, 10));
  s.add_request(req(1, 5, 10));
  EXPECT_EQ(step(s), "0@0+5!");
  EXPECT_TRUE(s.cancel(1));  // waiting
  EXPECT_TRUE(s.cancel(0));  // running
  EXPECT_FALSE(s.cancel(0));
  EXPECT_FALSE(s.cancel(42));
  EXPECT_FALSE(s.has_unfinished());
  EXPECT_EQ(s.kv().pool().num_free_blocks(), 8);
  const std::vector<engine::Request> done = s.take_finished();
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[0].finish_reason, engine::FinishReason::kCancelled);
  EXPECT_EQ(done[1].num_output_tokens(), 1);
  EXPECT_EQ(s.stats().num_cancelled, 2);
}

TEST(Ch04Scheduler, CancelDuringAStepTakesEffectInUpdate) {
  engine::Scheduler s(tiny_config(8, 4, 32));
  s.add_request(req(0, 5, 10));
  const engine::SchedulerOutput out = s.schedule();
  EXPECT_TRUE(s.cancel(0));
  EXPECT_TRUE(s.has_unfinished());  // the executor may still be writing its slots
  EXPECT_EQ(s.update(out, {7}), (Ids{0}));
  EXPECT_FALSE(s.has_unfinished());
  EXPECT_EQ(s.take_finished().at(0).finish_reason, engine::FinishReason::kCancelled);
  EXPECT_EQ(s.check_invariants(), "");
}

TEST(Ch04Scheduler, UpdateRejectsTheWrongNumberOfTokensAndStepsMustAlternate) {
  engine::Scheduler s(tiny_config(8, 4, 32));
  s.add_request(req(0, 5, 10));
  EXPECT_THROW(s.update(engine::SchedulerOutput{}, {}), std::logic_error);
  const engine::SchedulerOutput out = s.schedule();
  EXPECT_THROW(s.schedule(), std::logic_error);
  EXPECT_THROW(s.update(out, {}), InvalidArgument);
  EXPECT_THROW(s.update(out, {-1}), InvalidArgument);
}

TEST(Ch04Scheduler, AddRequestRefusesMalformedAndDuplicateRequests) {
  engine::Scheduler s(tiny_config(8, 4, 32));
  s.add_request(req(0, 5, 10));
  EXPECT_THROW(s.add_request(req(0, 5, 10)), InvalidArgument);  // id already live
  EXPECT_THROW(s.add_request(req(1, 0, 10)), InvalidArgument);  // empty prompt
  EXPECT_THROW(s.add_request(req(2, 3, 0)), InvalidArgument);   // max_tokens 0
  engine::Request stop = req(3, 3, 4);
  stop.stop_strings = {"end"};
  EXPECT_THROW(s.add_request(stop), InvalidArgument);  // no detokenizer
  engine::Request hot = req(4, 3, 4);
  hot.seq.sampling.temperature = -1;
  EXPECT_THROW(s.add_request(hot), InvalidArgument);
}

}  // namespace
}  // namespace nanoserve
