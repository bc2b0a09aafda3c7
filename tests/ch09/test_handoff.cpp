// Chapter 9's scheduler side of disaggregation, one process: a prefill scheduler hands a
// request off and keeps its blocks until released; a decode scheduler adopts it with fresh
// blocks (reusing its own prefix cache) and decodes on. Exact block ids, as in chapter 2.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/engine/disagg/disaggregated.h"
#include "common/engine/disagg/handoff.h"
#include "common/engine/serve/scheduler.h"

namespace nanoserve::engine {
namespace {

SchedulerConfig small(int blocks) {
  SchedulerConfig c;
  c.num_kv_blocks = blocks;
  c.block_size = 4;
  c.max_model_len = 32;
  c.max_num_batched_tokens = 64;
  return c;
}

void expect_invariants(const Scheduler& s) { EXPECT_EQ(s.check_invariants(), ""); }

TEST(Ch09HandOff, APrefilledRequestLeavesTheSchedulerAndKeepsItsBlocksUntilReleased) {
  Scheduler prefill(small(8));
  prefill.add_request(make_request(3, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 5));
  SchedulerOutput out = prefill.schedule();
  ASSERT_EQ(out.seqs.size(), 1u);
  EXPECT_THROW(prefill.hand_off(3), std::logic_error);  // during the step
  prefill.update(out, {42});
  Request r = prefill.hand_off(3);
  EXPECT_EQ(r.seq.token_ids.back(), 42);
  EXPECT_EQ(r.num_output_tokens(), 1);
  EXPECT_FALSE(prefill.has_unfinished());
  EXPECT_EQ(prefill.num_handed_off(), 1);
  EXPECT_EQ(prefill.kv().block_table(3).block_ids(), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(prefill.kv().pool().num_used_blocks(), 3);
  expect_invariants(prefill);
  prefill.release_handed_off(3);
  EXPECT_EQ(prefill.kv().pool().num_used_blocks(), 0);
  EXPECT_EQ(prefill.num_handed_off(), 0);
  expect_invariants(prefill);
  EXPECT_THROW(prefill.release_handed_off(3), InvalidArgument);
}

TEST(Ch09HandOff, OnlyARunningRequestWithItsFirstTokenCanBeHandedOff) {
  Scheduler prefill(small(8));
  prefill.add_request(make_request(1, {1, 2, 3, 4, 5, 6}, 5));
  EXPECT_THROW(prefill.hand_off(1), InvalidArgument);  // waiting
  SchedulerOutput out = prefill.schedule();
  prefill.update(out, {9});
  out = prefill.schedule();
  prefill.update(out, {8});  // two tokens now: a decode step already ran here
  EXPECT_THROW(prefill.hand_off(1), InvalidArgument);
  EXPECT_THROW(prefill.hand_off(77), InvalidArgument);
}

TEST(Ch09HandOff, HeldBlocksMakeAWaitingPromptWaitInsteadOfFailingForCapacity) {
  // 4 blocks: a 10-token prompt holds 3 after its hand-off; the next prompt needs 3 and waits
  // (it must not be finished as "longer than the pool": the pool is merely held).
  Scheduler prefill(small(4));
  prefill.add_request(make_request(1, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 5));
  SchedulerOutput out = prefill.schedule();
  prefill.update(out, {4});
  prefill.hand_off(1);
  prefill.add_request(make_request(2, {1, 3, 5, 7, 9, 11, 13, 15, 17}, 5));
  out = prefill.schedule();
  EXPECT_TRUE(out.empty());
  prefill.update(out, {});
  EXPECT_EQ(prefill.num_waiting(), 1);
  EXPECT_TRUE(prefill.take_finished().empty());
  prefill.release_handed_off(1);
  out = prefill.schedule();
  EXPECT_EQ(out.num_batched_tokens(), 9);
}

TEST(Ch09HandOff, APromptAloneWhileBlocksAreHeldIsPreemptedNotFinishedForCapacity) {
  // 5 blocks, chunks of 4 tokens: request 2's prompt (16 tokens) outgrows what request 1's held
  // blocks leave free. Alone in `running`, it must wait (preempted), not end as "KV cache
  // capacity": the held blocks come back once their KV is sent.
  SchedulerConfig c = small(5);
  c.max_num_batched_tokens = 4;
  Scheduler prefill(c);
  prefill.add_request(make_request(1, {1, 2, 3, 4, 5, 6, 7, 8}, 5));
  for (int i = 0; i < 2; ++i) {
    SchedulerOutput out = prefill.schedule();
    prefill.update(out, i == 1 ? std::vector<int>{6} : std::vector<int>{});
  }
  prefill.hand_off(1);  // holds 2 blocks
  prefill.add_request(make_request(2, {9, 8, 7, 6, 5, 4, 3, 2, 1, 2, 3, 4, 5, 6, 7, 8}, 5));
  for (int i = 0; i < 4; ++i) {
    SchedulerOutput out = prefill.schedule();
    prefill.update(out, {});
    expect_invariants(prefill);
  }
  EXPECT_TRUE(prefill.take_finished().empty());
  EXPECT_EQ(prefill.num_waiting(), 1);
  EXPECT_GT(prefill.stats().num_preemptions, 0);
  prefill.release_handed_off(1);
  // Now it runs: its first chunks come back from the prefix cache, the rest is computed.
  for (int i = 0; i < 4 && prefill.request(2).num_output_tokens() == 0; ++i) {
    SchedulerOutput out = prefill.schedule();
    prefill.update(out, out.num_sampled() == 1 ? std::vector<int>{3} : std::vector<int>{});
  }
  EXPECT_EQ(prefill.request(2).num_output_tokens(), 1);
  expect_invariants(prefill);
}

TEST(Ch09HandOff, AdoptionGivesFreshBlocksReusesTheDecodeSidesPrefixCacheAndDecodesOn) {
  Scheduler decode(small(16));
  Request a = make_request(5, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 4);
  a.seq.token_ids.push_back(77);  // token 0, from the prefill instance
  ASSERT_TRUE(decode.can_adopt(a));
  EXPECT_EQ(decode.adopt(a), 0);
  EXPECT_EQ(decode.kv().block_table(5).block_ids(), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(decode.request(5).seq.num_computed_tokens, 10);
  expect_invariants(decode);
  EXPECT_THROW(decode.adopt(a), InvalidArgument);  // already here
  // The same first 8 tokens: two full blocks come from this instance's cache.
  Request b = make_request(6, {1, 2, 3, 4, 5, 6, 7, 8, 20, 21, 22}, 4);
  b.seq.token_ids.push_back(78);
  EXPECT_EQ(decode.adopt(b), 8);
  EXPECT_EQ(decode.kv().block_table(6).block_ids(), (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(decode.kv().pool().block(0).ref_cnt, 2);
  // The next step decodes both: one row each, at the positions after their first tokens.
  SchedulerOutput out = decode.schedule();
  ASSERT_EQ(out.seqs.size(), 2u);
  EXPECT_EQ(out.positions, (std::vector<int>{10, 11}));
  EXPECT_EQ(out.input_ids, (std::vector<int>{77, 78}));
  EXPECT_EQ(out.num_sampled(), 2);
  decode.update(out, {3, 4});
  expect_invariants(decode);
  Request fresh = make_request(9, {1, 2}, 3);  // nothing generated yet: not prefilled
  EXPECT_THROW(decode.can_adopt(fresh), InvalidArgument);
}

TEST(Ch09HandOff, AdoptionWaitsWhenThePoolIsFull) {
  Scheduler decode(small(3));
  Request a = make_request(1, {1, 2, 3, 4, 5, 6, 7, 8, 9}, 4);  // 3 blocks
  a.seq.token_ids.push_back(5);
  Request b = make_request(2, {3, 3, 3, 3, 3}, 4);
  b.seq.token_ids.push_back(5);
  decode.adopt(a);
  EXPECT_FALSE(decode.can_adopt(b));
  EXPECT_THROW(decode.adopt(b), BlockPoolExhausted);
  expect_invariants(decode);
}

TEST(Ch09HandOff, HeadersSurviveTheWireAndMalformedOnesAreRefused) {
  Request r = make_request(12, {1, 2, 3}, 1);
  r.seq.token_ids.push_back(2);
  r.token_times_s.push_back(1.5);
  finish_request(r, FinishReason::kLength, "max_tokens 1", 1.5);
  const HandOff h = HandOff::of(r, 0);
  const std::vector<std::uint8_t> bytes = h.encode();
  const HandOff back = HandOff::decode(bytes);
  EXPECT_TRUE(back.finished);
  EXPECT_EQ(back.finish_detail, "max_tokens 1");
  Request copy = make_request(12, {1, 2, 3}, 1);
  back.apply_to(copy);
  EXPECT_TRUE(copy.finished());
  EXPECT_EQ(copy.seq.token_ids, r.seq.token_ids);
  EXPECT_THROW(back.apply_to(copy), InvalidArgument);  // applied twice
  std::vector<std::uint8_t> cut(bytes.begin(), bytes.end() - 3);
  EXPECT_THROW(HandOff::decode(cut), InvalidArgument);
  std::vector<std::uint8_t> bad = bytes;
  bad[0] ^= 0xff;
  EXPECT_THROW(HandOff::decode(bad), InvalidArgument);
}

TEST(Ch09HandOff, ConfigsThatCannotWorkAreRefusedByName) {
  DisaggConfig c;
  c.prefill = small(8);
  c.decode = small(8);
  EXPECT_NO_THROW(c.validate(2));
  auto message = [&](int ranks) {
    try {
      c.validate(ranks);
    } catch (const InvalidArgument& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(message(1).find("at least 2 ranks"), std::string::npos);
  c.decode_rank = 2;
  EXPECT_NE(message(2).find("decode_rank 2"), std::string::npos);
  c.decode_rank = 0;
  c.decode.block_size = 8;
  EXPECT_NE(message(2).find("block_size differs"), std::string::npos);
  c.decode = small(7);  // 32 tokens need 8 blocks of 4
  EXPECT_NE(message(2).find("cannot hold one request"), std::string::npos);
}

}  // namespace
}  // namespace nanoserve::engine
