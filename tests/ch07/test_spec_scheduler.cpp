// Speculative decoding inside the continuous-batching scheduler (chapter 7): draft rows in the
// plan, the token budget, KV slots reserved for drafts and rolled back through the block
// manager when rejected, drafts that never cost a preemption, the checks on what the executor
// returns — hand-computed with exact block ids — and, on random workloads with tiny pools and
// per-request γ, every request's tokens equal to its solo run with no block leaked.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "ch04/sched_test_support.h"
#include "ch07/stack_test_support.h"
#include "common/engine/serve/serving_loop.h"
#include "common/error.h"

namespace nanoserve::engine {
namespace {

using Ids = std::vector<int>;
using nanoserve::testing::describe;
using nanoserve::testing::FakeModelDrafter;
using nanoserve::testing::tiny_config;

/// Proposes the same fixed tokens for every request (as many as γ allows).
class ScriptedDrafter final : public Drafter {
 public:
  explicit ScriptedDrafter(Ids tokens) : tokens_(std::move(tokens)) {}
  void propose(std::vector<DraftRequest>& batch) override {
    for (DraftRequest& d : batch) {
      d.proposal.tokens.assign(tokens_.begin(),
                               tokens_.begin() + std::min<std::ptrdiff_t>(d.gamma, tokens_.size()));
      gammas.push_back(d.gamma);
    }
  }
  int vocab_size() const override { return 0; }
  std::string name() const override { return "scripted"; }
  Ids gammas;  ///< γ' of every request drafted for

 private:
  Ids tokens_;
};

Request spec_req(int64_t id, int prompt_len, int max_tokens, int gamma) {
  Request r = nanoserve::testing::req(id, prompt_len, max_tokens);
  r.num_speculative_tokens = gamma;
  return r;
}

TEST(Ch07SpecScheduler, DraftsRideAfterTheLastTokenAndRejectedOnesAreRolledBack) {
  Scheduler s(tiny_config(/*blocks=*/16, /*block_size=*/4, /*budget=*/16));
  s.add_request(spec_req(0, 6, 10, 3));
  ScriptedDrafter drafter({40, 41, 42});
  SchedulerOutput out = s.schedule();
  EXPECT_EQ(describe(out), "0@0+6!");
  s.update(out, {30});  // token 30 at position 6
  s.propose_drafts(drafter);
  EXPECT_EQ(drafter.gammas, Ids{3});
  EXPECT_EQ(s.request(0).draft.tokens, (Ids{40, 41, 42}));

  out = s.schedule();
  // The last token and three drafts: positions 6..9, every row a logit row, 4 entries back.
  EXPECT_EQ(describe(out), "0@6+4!");
  EXPECT_EQ(out.seqs[0].num_draft_tokens, 3);
  EXPECT_EQ(out.input_ids, (Ids{30, 40, 41, 42}));
  EXPECT_EQ(out.positions, (Ids{6, 7, 8, 9}));
  EXPECT_EQ(out.logit_rows(), (Ids{0, 1, 2, 3}));
  EXPECT_EQ(out.num_sampled(), 4);
  EXPECT_EQ(s.kv().block_table(0).block_ids(), (Ids{0, 1, 2}));  // slots for the drafts too
  EXPECT_EQ(s.kv().block_table(0).num_tokens(), 10);
  EXPECT_EQ(s.check_invariants(), "");

  // 40 accepted, 51 replaces 41: KV stands up to position 7; block 2 (positions 8, 9) goes back.
  s.update(out, {40, 51, -1, -1});
  const Request& r = s.request(0);
  EXPECT_EQ(r.output_tokens(), (Ids{30, 40, 51}));
  EXPECT_EQ(r.seq.num_computed_tokens, 8);
  EXPECT_EQ(s.kv().block_table(0).block_ids(), (Ids{0, 1}));
  EXPECT_EQ(s.kv().block_table(0).num_tokens(), 8);
  EXPECT_EQ(s.kv().pool().num_free_blocks(), 14);
  EXPECT_TRUE(r.draft.tokens.empty());  // consumed
  EXPECT_EQ(r.num_draft_tokens, 3);
  EXPECT_EQ(r.num_accepted_tokens, 1);
  EXPECT_EQ(s.stats().num_accepted_tokens, 1);
  EXPECT_EQ(s.check_invariants(), "");

  // Every draft accepted: the bonus token comes too, 4 tokens from one step. γ' is clipped
  // by what is left of max_tokens (10 − 3 = 7 left: γ' = min(3, 6)).
  s.propose_drafts(drafter);
  out = s.schedule();
  EXPECT_EQ(describe(out), "0@8+4!");
  s.update(out, {40, 41, 42, 43});
  EXPECT_EQ(s.request(0).output_tokens(), (Ids{30, 40, 51, 40, 41, 42, 43}));
  EXPECT_EQ(s.kv().block_table(0).num_tokens(), 12);
  // 3 tokens left: γ' = 2, so the bonus token is the 10th and last.
  s.propose_drafts(drafter);
  EXPECT_EQ(drafter.gammas, (Ids{3, 3, 2}));
  out = s.schedule();
  EXPECT_EQ(describe(out), "0@12+3!");
  s.update(out, {40, 41, 44});
  const std::vector<Request> done = s.take_finished();
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].num_output_tokens(), 10);
  EXPECT_EQ(done[0].finish_reason, FinishReason::kLength);
  EXPECT_EQ(s.kv().pool().num_free_blocks(), 16);
}

TEST(Ch07SpecScheduler, AStopTokenAmongAcceptedDraftsEndsTheRequestThere) {
  Scheduler s(tiny_config(16, 4, 16));
  Request r = spec_req(0, 3, 20, 4);
  r.stop_token_ids = {41};
  s.add_request(r);
  ScriptedDrafter drafter({40, 41, 42, 43});
  s.update(s.schedule(), {30});
  s.propose_drafts(drafter);
  const SchedulerOutput out = s.schedule();
  s.update(out, {40, 41, 42, 43, 44});  // all accepted, but 41 stops generation
  const std::vector<Request> done = s.take_finished();
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].output_tokens(), (Ids{30, 40, 41}));
  EXPECT_EQ(done[0].finish_detail, "stop token 41");
  EXPECT_EQ(s.kv().pool().num_free_blocks(), 16);
}

TEST(Ch07SpecScheduler, DraftRowsCountAgainstTheBudgetAndAreCutToIt) {
  Scheduler s(tiny_config(16, 4, /*budget=*/4));
  s.add_request(spec_req(0, 2, 10, 3));
  s.add_request(spec_req(1, 2, 10, 3));
  ScriptedDrafter drafter({40, 41, 42});
  SchedulerOutput out = s.schedule();
  EXPECT_EQ(describe(out), "0@0+2! 1@0+2!");
  s.update(out, {30, 31});
  s.propose_drafts(drafter);
  // Request 0's four rows spend the whole budget; request 1 waits with its drafts.
  out = s.schedule();
  EXPECT_EQ(describe(out), "0@2+4!");
  s.update(out, {40, 41, 42, 43});
  EXPECT_EQ(s.request(1).draft.tokens.size(), 3u);
  // Now request 0 decodes one row (no drafts proposed), leaving 3 rows: request 1's last
  // token and 2 of its 3 drafts.
  out = s.schedule();
  EXPECT_EQ(describe(out), "0@6+1! 1@2+3!");
  EXPECT_EQ(out.seqs[1].num_draft_tokens, 2);
  EXPECT_EQ(out.num_batched_tokens(), 4);
  EXPECT_EQ(out.num_sampled(), 1 + 3);
  s.update(out, {7, 40, 41, 9});
  EXPECT_EQ(s.request(1).output_tokens(), (Ids{31, 40, 41, 9}));
  EXPECT_EQ(s.check_invariants(), "");
}

TEST(Ch07SpecScheduler, DraftsNeverCostAPreemption) {
  // 4 blocks of 2: both prompts of 3 tokens take 2 blocks each, the pool is full.
  Scheduler s(tiny_config(/*blocks=*/4, /*block_size=*/2, /*budget=*/16));
  s.add_request(spec_req(0, 3, 8, 2));
  s.add_request(spec_req(1, 3, 8, 2));
  ScriptedDrafter drafter({40, 41});
  SchedulerOutput out = s.schedule();
  EXPECT_EQ(describe(out), "0@0+3! 1@0+3!");
  s.update(out, {30, 31});
  s.propose_drafts(drafter);
  EXPECT_EQ(s.request(0).draft.tokens.size(), 2u);
  // Request 0's drafts need a third block: instead of preempting request 1, they are dropped.
  out = s.schedule();
  EXPECT_EQ(describe(out), "0@3+1! 1@3+1!");
  EXPECT_EQ(out.num_draft_rows(), 0);
  EXPECT_TRUE(out.preempted_ids.empty());
  EXPECT_TRUE(s.request(0).draft.tokens.empty());
  EXPECT_EQ(s.check_invariants(), "");
}

TEST(Ch07SpecScheduler, UpdateRefusesEntriesThatAreNotAVerificationAndStaysRetryable) {
  Scheduler s(tiny_config(16, 4, 16));
  s.add_request(spec_req(0, 3, 10, 2));
  ScriptedDrafter drafter({40, 41});
  s.update(s.schedule(), {30});
  s.propose_drafts(drafter);
  const SchedulerOutput out = s.schedule();
  ASSERT_EQ(out.num_sampled(), 3);
  for (const Ids& bad : {Ids{-1, -1, -1}, Ids{41, 5, -1}, Ids{40, 5, 6}, Ids{40, -1, 7}, Ids{40, 5}}) {
    EXPECT_THROW(s.update(out, bad), InvalidArgument) << ::testing::PrintToString(bad);
  }
  s.update(out, {40, 5, -1});
  EXPECT_EQ(s.request(0).output_tokens(), (Ids{30, 40, 5}));
  EXPECT_EQ(s.check_invariants(), "");
}

TEST(Ch07SpecScheduler, ProposalsLongerThanGammaOrOutsideTheVocabularyAreRefused) {
  class Greedy final : public Drafter {
   public:
    explicit Greedy(int extra, int token) : extra_(extra), token_(token) {}
    void propose(std::vector<DraftRequest>& batch) override {
      for (DraftRequest& d : batch) d.proposal.tokens.assign(std::size_t(d.gamma + extra_), token_);
    }
    int vocab_size() const override { return 50; }
    std::string name() const override { return "greedy"; }

   private:
    int extra_, token_;
  };
  Scheduler s(tiny_config(16, 4, 16));
  s.add_request(spec_req(0, 3, 10, 2));
  s.update(s.schedule(), {30});
  Greedy too_many(1, 7), outside(0, 50);
  EXPECT_THROW(s.propose_drafts(too_many), InvalidArgument);
  EXPECT_THROW(s.propose_drafts(outside), InvalidArgument);
}

}  // namespace
}  // namespace nanoserve::engine

namespace nanoserve::engine {
namespace {

TEST(Ch07KVDrafts, DraftSlotsAreCachedOnlyOnceVerified) {
  KVCacheManager kv(8, 4, /*enable_prefix_caching=*/true);
  Sequence seq;
  seq.seq_id = 1;
  seq.token_ids = {1, 2, 3, 4, 5, 6};
  kv.allocate(seq);                 // [1 2 3 4]* [5 6 _ _]
  seq.token_ids.push_back(7);       // the token sampled last
  EXPECT_EQ(kv.append_slots(seq, 1, 3).size(), 0u);  // 7 and three drafts: 10 slots
  EXPECT_EQ(kv.block_table(1).block_ids(), (Ids{0, 1, 2}));
  EXPECT_EQ(kv.block_table(1).num_draft_slots(), 3);
  EXPECT_TRUE(kv.pool().block(0).cached);
  EXPECT_FALSE(kv.pool().block(1).cached) << "block 1 holds a draft: not cached yet";
  EXPECT_EQ(kv.check_invariants(), "");
  EXPECT_THROW(kv.append_slots(seq, 1), std::logic_error) << "drafts not accepted yet";
  // Draft 40 accepted (then 9 sampled); 41 and 42 rejected.
  seq.token_ids.insert(seq.token_ids.end(), {40, 9});
  kv.accept_drafts(seq, 1);
  EXPECT_EQ(kv.block_table(1).block_ids(), (Ids{0, 1}));
  EXPECT_EQ(kv.block_table(1).num_tokens(), 8);
  EXPECT_TRUE(kv.pool().block(1).cached);
  EXPECT_EQ(kv.pool().block(1).token_ids, (Ids{5, 6, 7, 40}));
  EXPECT_EQ(kv.pool().free_queue_ids(), (Ids{3, 4, 5, 6, 7, 2}));
  EXPECT_EQ(kv.check_invariants(), "");
  EXPECT_THROW(kv.accept_drafts(seq, 1), InvalidArgument) << "no drafts pending";
}

TEST(Ch07KVDrafts, DraftsThatDoNotFitChangeNothing) {
  KVCacheManager kv(2, 4, false);
  Sequence seq;
  seq.seq_id = 1;
  seq.token_ids = {1, 2, 3};
  kv.allocate(seq);
  seq.token_ids.push_back(4);
  EXPECT_TRUE(kv.can_append(seq, 1, 4));
  EXPECT_FALSE(kv.can_append(seq, 1, 5));
  EXPECT_THROW(kv.append_slots(seq, 1, 5), BlockPoolExhausted);
  EXPECT_EQ(kv.block_table(1).num_tokens(), 3);
  EXPECT_EQ(kv.pool().num_free_blocks(), 1);
  EXPECT_EQ(kv.check_invariants(), "");
}

}  // namespace
}  // namespace nanoserve::engine
