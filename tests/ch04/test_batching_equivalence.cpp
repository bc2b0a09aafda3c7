// The equality that anchors chapters 3 and 4 (docs/design.md, "Determinism"): on random
// workloads, every request's tokens are identical whether it runs alone, in a static batch,
// or under continuous batching — with and without chunked prefill and prefix caching, and
// through preemptions forced by a small KV pool. Greedy and seeded sampling alike.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/harness/fake_executor.h"
#include "common/engine/serve/serving_loop.h"
#include "common/engine/serve/static_batcher.h"
#include "common/harness/workload.h"

namespace nanoserve {
namespace {

constexpr int kVocab = 40;
constexpr int kMaxModelLen = 96;
constexpr int kBlockSize = 4;

/// A mixed workload: long-tailed prompt lengths, uniform output lengths, Poisson arrivals,
/// half greedy and half sampled, EOS = 0, two requests sharing a prefix now and then.
std::vector<engine::Request> workload(uint64_t seed, int n) {
  harness::WorkloadSpec spec;
  spec.num_requests = n;
  spec.rate = 40;
  spec.prompt_len = harness::LengthDist::log_normal(12, 0.8, 1, 60);
  spec.max_tokens = harness::LengthDist::uniform(1, 30);
  spec.seed = seed;
  harness::RequestDefaults defaults;
  defaults.vocab_size = kVocab;
  defaults.bos_id = 1;  // every prompt starts with BOS: block 0 is often shared
  defaults.stop_token_ids = {0};
  std::vector<engine::Request> requests = harness::make_requests(harness::generate_workload(spec), defaults);
  for (size_t i = 0; i < requests.size(); ++i) {
    if (i % 2 == 0) requests[i].seq.sampling.temperature = 0.0f;
  }
  return requests;
}

/// Each request's tokens when it runs alone (no scheduler, no batch, no KV).
std::vector<std::vector<int>> solo_tokens(const std::vector<engine::Request>& requests) {
  std::vector<std::vector<int>> out;
  for (const engine::Request& r : requests) {
    out.push_back(harness::fake_reference_run(r, kVocab, kMaxModelLen).seq.token_ids);
  }
  return out;
}

void expect_solo_tokens(const engine::ServingRun& run, const std::vector<std::vector<int>>& solo,
                        const std::string& what) {
  ASSERT_EQ(run.requests.size(), solo.size()) << what;
  for (const engine::Request& r : run.requests) {
    ASSERT_NE(r.finish_reason, engine::FinishReason::kRejected) << what << ": " << r.finish_detail;
    EXPECT_EQ(r.seq.token_ids, solo[size_t(r.id())]) << what << ", request " << r.id();
  }
}

engine::SchedulerConfig continuous_config(bool chunked, bool prefix, int num_blocks) {
  engine::SchedulerConfig c;
  c.max_num_seqs = 16;
  c.max_num_batched_tokens = chunked ? 24 : kMaxModelLen;
  c.max_model_len = kMaxModelLen;
  c.enable_chunked_prefill = chunked;
  c.num_kv_blocks = num_blocks;
  c.block_size = kBlockSize;
  c.enable_prefix_caching = prefix;
  return c;
}

TEST(Ch04BatchingEquivalence, EveryRequestGetsItsSoloTokensUnderEveryPolicy) {
  // 24 blocks hold one worst-case request (60 + 30 tokens) but a fraction of 24 requests.
  constexpr int kTinyPool = 24;
  long long preemptions = 0;
  for (uint64_t seed = 0; seed < 12; ++seed) {
    const std::vector<engine::Request> requests = workload(seed, 24);
    const std::vector<std::vector<int>> solo = solo_tokens(requests);
    for (bool chunked : {true, false}) {
      for (bool prefix : {true, false}) {
        for (int blocks : {kTinyPool, 1024}) {
          engine::SimulatedClock clock;
          harness::FakeExecutor ex(blocks, kBlockSize, kVocab, &clock);
          const engine::ServingRun run =
              engine::run_continuous(requests, continuous_config(chunked, prefix, blocks), ex, clock);
          expect_solo_tokens(run, solo,
                             "continuous seed " + std::to_string(seed) + " chunked " +
                                 std::to_string(chunked) + " prefix " + std::to_string(prefix) +
                                 " blocks " + std::to_string(blocks));
          preemptions += run.num_preemptions;
          if (blocks == 1024) {
            EXPECT_EQ(run.num_preemptions, 0);
          }
        }
      }
    }
    for (int batch_size : {1, 3, 8}) {
      engine::StaticBatchConfig sc;
      sc.batch_size = batch_size;
      sc.max_model_len = kMaxModelLen;
      sc.num_kv_blocks = kTinyPool * 2;
      sc.block_size = kBlockSize;
      sc.enable_prefix_caching = batch_size == 3;
      engine::SimulatedClock clock;
      harness::FakeExecutor ex(sc.num_kv_blocks, kBlockSize, kVocab, &clock);
      expect_solo_tokens(engine::run_static(requests, sc, ex, clock), solo,
                         "static seed " + std::to_string(seed) + " batch " +
                             std::to_string(batch_size));
    }
    if (::testing::Test::HasFailure()) return;
  }
  EXPECT_GT(preemptions, 50) << "the small pool should force preemptions";
}

}  // namespace
}  // namespace nanoserve
