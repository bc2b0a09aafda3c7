// Speculative decoding through the real model inside continuous batching (chapter 7): the
// ModelExecutor verifies drafts from prompt lookup and from a draft model (its own paged KV,
// batched), under chunked prefill, prefix hits and a KV pool small enough to preempt — and
// every greedy request still produces exactly its solo tokens (chapter 1's NaiveDecoder,
// no batch, no speculation).
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "ch01/engine_test_support.h"
#include "ch04/model_test_support.h"
#include "ch07/stack_test_support.h"
#include "common/engine/serve/draft_model_drafter.h"
#include "common/engine/serve/model_executor.h"
#include "common/engine/serve/serving_loop.h"
#include "common/model_bundle.h"
#include "common/speculative/draft_models.h"
#include "test_support.h"

namespace nanoserve::engine {
namespace {

using nanoserve::testing::expect_solo_tokens;
using nanoserve::testing::solo_tokens;

constexpr int kMaxModelLen = 64;

SchedulerConfig small_config(int num_blocks) {
  SchedulerConfig c;
  c.max_num_seqs = 4;
  c.max_num_batched_tokens = 16;  // < most prompts: chunked prefill
  c.max_model_len = kMaxModelLen;
  c.num_kv_blocks = num_blocks;
  c.block_size = 4;
  c.enable_prefix_caching = true;
  return c;
}

/// Greedy requests from the story sample's openings (stories repeat themselves: prompt lookup
/// finds matches), each with its own γ (0 for one of them).
std::vector<Request> story_requests(const Tokenizer& tok) {
  const char* texts[] = {"Once upon a time, there was a little girl named Lily. Lily",
                         "One day, a boy named Tom went to the park. Tom",
                         "Once upon a time, there was a big dog. The dog"};
  std::vector<Request> out;
  for (int i = 0; i < 3; ++i) {
    Request r = make_request(i, tok.encode(texts[i], true, false), 8, SamplingParams{0.0f});
    r.stop_token_ids = {2};
    r.num_speculative_tokens = i == 2 ? 0 : 2 + i;
    out.push_back(r);
  }
  return out;
}

class Ch07EngineSpec : public ::testing::Test {
 protected:
  void SetUp() override {
    NANOSERVE_REQUIRE_DEVICE();
  }
  ServingRun run(const std::vector<Request>& requests, const SchedulerConfig& config,
                 Drafter& drafter, const DeviceModel& model) {
    ModelExecutor executor(model, executor_options_for(config, 3));
    SimulatedClock clock;
    return run_continuous(requests, config, executor, clock, {}, &drafter);
  }
};

TEST_F(Ch07EngineSpec, GreedyRequestsGetTheirSoloTokensWithEveryDrafterAndPreemption) {
  // A micro model (cheap on the simulator) whose greedy text loops, so prompt lookup hits;
  // its first block is the draft model.
  const Model target_host = testing::micro_model(11, 2);
  const DeviceModel target(target_host, DType::kF32);
  const DeviceModel draft(speculative::first_layers(target_host, 1), DType::kF32);
  std::vector<Request> requests = testing::model_workload(6, 6, target_host.config.vocab_size,
                                                          12, 14);
  for (Request& r : requests) {
    r.seq.sampling.temperature = 0.0f;
    r.stop_token_ids.clear();  // 1 in 24 tokens would be EOS: outputs would stay short
    r.max_tokens = 14;
    r.num_speculative_tokens = int(r.id() % 4) + (r.id() == 1 ? 0 : 1);  // γ 1..4, and 0
  }
  const std::vector<std::vector<int>> solo = solo_tokens(target, requests, kMaxModelLen);

  NgramDrafter ngram;
  const ServingRun by_ngram = run(requests, small_config(10), ngram, target);
  expect_solo_tokens(by_ngram, solo, "n-gram drafts, 10 blocks");
  EXPECT_GT(by_ngram.num_preemptions, 0) << "the 10-block pool should preempt";
  std::printf("ngram: %lld preemptions, %lld of %lld drafts accepted\n", by_ngram.num_preemptions, by_ngram.num_accepted_tokens, by_ngram.num_draft_tokens);
  EXPECT_GT(by_ngram.num_accepted_tokens, 0);
  EXPECT_LT(by_ngram.num_accepted_tokens, by_ngram.num_draft_tokens);

  // The draft model in a pool of its own, too small for every request's context: it drops
  // draft KV and rebuilds it.
  DraftModelDrafterOptions o;
  o.num_kv_blocks = 6;
  o.block_size = 4;
  o.max_tokens_per_step = 16;  // catch-ups longer than that run in several passes
  DraftModelDrafter drafter(draft, target_host.config.vocab_size, o);
  const ServingRun by_model = run(requests, small_config(10), drafter, target);
  expect_solo_tokens(by_model, solo, "draft model, 10 blocks");
  std::printf("model: %lld preemptions, %lld of %lld drafts accepted, %lld dropped, %lld skipped, %lld passes\n", by_model.num_preemptions, by_model.num_accepted_tokens, by_model.num_draft_tokens, drafter.stats().dropped, drafter.stats().skipped, drafter.stats().passes);
  EXPECT_GT(by_model.num_accepted_tokens, 0);
  EXPECT_LT(by_model.num_accepted_tokens, by_model.num_draft_tokens);
  EXPECT_GT(drafter.stats().dropped + drafter.stats().skipped, 0) << "the draft pool is small";
  EXPECT_EQ(drafter.kv().num_sequences(), 0) << "finished requests' draft KV is freed";
}

TEST_F(Ch07EngineSpec, Stories260KGreedyRequestsWithADraftModelGetTheirSoloTokens) {
  NANOSERVE_REQUIRE_DATA(path, "stories260K.bin");
  const ModelBundle b = load_model_bundle(path);
  const DeviceModel target(b.model, DType::kF32);
  std::vector<Request> requests = story_requests(*b.tokenizer);
  requests.pop_back();  // two are enough: the simulator runs every row on the CPU
  const std::vector<std::vector<int>> solo = solo_tokens(target, requests, kMaxModelLen);
  // The target's first 3 of 5 blocks drafting (chapter 6's layer-truncated draft).
  const DeviceModel draft(speculative::first_layers(b.model, 3), DType::kF32);
  DraftModelDrafter drafter(draft, b.model.config.vocab_size);
  const ServingRun run_ = run(requests, small_config(64), drafter, target);
  expect_solo_tokens(run_, solo, "stories260K, layers-3 draft");
  EXPECT_GT(run_.num_accepted_tokens, 0);
  EXPECT_LT(run_.num_accepted_tokens, run_.num_draft_tokens);
}

}  // namespace
}  // namespace nanoserve::engine
