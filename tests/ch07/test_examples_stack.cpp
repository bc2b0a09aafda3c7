// Examples of use of the chapter-7 engine types (common/engine/): drafters, the executor's
// counters of drafts, parallel sampling, swap preemption. Each TEST is one example: the code
// between its `//! [Name]` markers is what the type's documentation shows (Doxygen \snippet),
// and the test asserts what the example claims, so the documentation cannot go stale.
#include <gtest/gtest.h>

#include <vector>

#include "ch01/engine_test_support.h"
#include "ch07/stack_test_support.h"
#include "common/engine/model/host_kv_pool.h"
#include "common/engine/model/serving_weights.h"
#include "common/engine/serve/draft_model_drafter.h"
#include "common/engine/serve/drafter.h"
#include "common/engine/serve/model_executor.h"
#include "common/engine/serve/scheduler.h"
#include "common/engine/serve/serving_loop.h"
#include "common/speculative/draft_models.h"

namespace nanoserve::engine {
namespace {

using Ids = std::vector<int>;

TEST(Ch07Examples, Drafter) {
  //! [Drafter]
  SchedulerConfig config;
  config.num_kv_blocks = 8;
  config.block_size = 4;
  Scheduler scheduler(config);
  // A prompt that repeats itself: prompt lookup guesses that "7 8" is followed by "9 5".
  Request r = make_request(0, {1, 7, 8, 9, 5, 7, 8}, /*max_tokens=*/8, SamplingParams{0.0f});
  r.num_speculative_tokens = 2;  // γ of this request
  scheduler.add_request(r);
  SchedulerOutput step = scheduler.schedule();  // the prompt
  scheduler.update(step, {9});                  // its first token: ... 7 8 9

  NgramDrafter drafter;                // between steps, drafts for every speculating request
  scheduler.propose_drafts(drafter);   // "7 8 9" was followed by "5 7" earlier
  EXPECT_EQ(scheduler.request(0).draft.tokens, (Ids{5, 7}));

  step = scheduler.schedule();         // the last token and both drafts, in one pass
  EXPECT_EQ(step.input_ids, (Ids{9, 5, 7}));
  EXPECT_EQ(step.num_sampled(), 3);    // one entry per logit row
  // The executor verifies (rejection sampling): 5 kept, 7 rejected and replaced by 3.
  scheduler.update(step, {5, 3, -1});
  EXPECT_EQ(scheduler.request(0).output_tokens(), (Ids{9, 5, 3}));
  EXPECT_EQ(scheduler.stats().num_accepted_tokens, 1);
  //! [Drafter]
}

TEST(Ch07Examples, ModelExecutorStats) {
  NANOSERVE_REQUIRE_DEVICE();
  const Model host = testing::micro_model(3);  // any Model: stories260K, synthetic, …
  const DeviceModel model(host, DType::kF32);
  //! [ModelExecutorStats]
  SchedulerConfig config;
  config.max_num_batched_tokens = 32;
  config.max_model_len = 48;
  config.num_kv_blocks = 16;
  config.block_size = 4;
  // Buffers for one step of `config` in one pass, verifying up to 3 drafts per request.
  ModelExecutor executor(model, executor_options_for(config, /*max_gamma=*/3));
  Request r = make_request(0, {1, 4, 7, 1, 4}, /*max_tokens=*/12, SamplingParams{0.0f});
  r.num_speculative_tokens = 3;
  NgramDrafter drafter;  // greedy text loops: prompt lookup finds drafts
  SimulatedClock clock;
  const ServingRun run = run_continuous({r}, config, executor, clock, {}, &drafter);
  EXPECT_EQ(run.requests[0].num_output_tokens(), 12);
  EXPECT_GT(run.num_draft_tokens, 0);
  EXPECT_EQ(executor.counters().passes, static_cast<long long>(run.steps.size()));  // 1 per step
  EXPECT_EQ(executor.stats().draft_rows, run.num_draft_tokens);  // every draft verified
  EXPECT_GT(executor.stats().host_logit_rows, 0);  // verifications are decided on the host
  //! [ModelExecutorStats]
}

TEST(Ch07Examples, DraftModelDrafter) {
  NANOSERVE_REQUIRE_DEVICE();
  const Model target_host = testing::micro_model(3, 2);
  const DeviceModel target(target_host, DType::kF32);
  //! [DraftModelDrafter]
  // The target's first block as the draft (chapter 6's early exit), with a pool of its own.
  const DeviceModel draft(speculative::first_layers(target_host, 1), DType::kF32);
  DraftModelDrafterOptions options;
  options.num_kv_blocks = 32;
  options.block_size = 4;
  DraftModelDrafter drafter(draft, target_host.config.vocab_size, options);

  SchedulerConfig config;
  config.num_kv_blocks = 32;
  config.block_size = 4;
  config.max_model_len = 48;
  ModelExecutor executor(target, executor_options_for(config, 2));
  std::vector<Request> requests;
  for (int i = 0; i < 3; ++i) {
    requests.push_back(make_request(i, {1, 2 + i, 3}, /*max_tokens=*/5, SamplingParams{0.0f}));
    requests.back().num_speculative_tokens = 2;
  }
  SimulatedClock clock;
  const ServingRun run = run_continuous(requests, config, executor, clock, {}, &drafter);
  EXPECT_GT(run.num_draft_tokens, 0);
  EXPECT_GT(drafter.stats().passes, 0);        // batched: all requests in each draft pass
  EXPECT_EQ(drafter.kv().num_sequences(), 0);  // finished requests' draft KV is freed
  //! [DraftModelDrafter]
}

TEST(Ch07Examples, HostBlockPool) {
  //! [HostBlockPool]
  // A KV manager with 8 device blocks of 4 tokens and a host pool of 4 blocks.
  KVCacheManager kv(8, 4, /*enable_prefix_caching=*/false, &xxh3_block_hash, /*host=*/4);
  Sequence seq;
  seq.seq_id = 7;
  seq.token_ids = {1, 2, 3, 4, 5};
  kv.allocate(seq);                                 // device blocks 0, 1
  const std::vector<BlockSwap> out = kv.swap_out({7});  // preempted by swapping
  EXPECT_EQ(out, (std::vector<BlockSwap>{{0, 0}, {1, 1}}));  // device → host, per block
  EXPECT_EQ(kv.host_pool().num_free_blocks(), 2);
  EXPECT_EQ(kv.pool().num_free_blocks(), 8);        // the device blocks are free for others
  const std::vector<BlockSwap> in = kv.swap_in({&seq});  // later: back to fresh device blocks
  EXPECT_EQ(in.size(), 2u);                         // host → device copies for the executor
  EXPECT_EQ(kv.block_table(7).num_tokens(), 5);     // nothing to recompute
  EXPECT_EQ(kv.host_pool().num_free_blocks(), 4);
  //! [HostBlockPool]
}

TEST(Ch07Examples, HostKVPool) {
  NANOSERVE_REQUIRE_DEVICE();
  const Model host_model = testing::micro_model(3);
  //! [HostKVPool]
  PagedKVCache cache(host_model.config, DType::kF32, /*num_blocks=*/4, /*block_size=*/2);
  HostKVPool host(cache, /*num_blocks=*/2);  // pinned, the same block layout
  EXPECT_EQ(host.bytes(), 2 * cache.block_bytes() * 2 * host_model.config.n_layers);
  std::vector<float> keys(std::size_t(cache.block_bytes()) / sizeof(float));
  for (std::size_t i = 0; i < keys.size(); ++i) keys[i] = float(i);
  for (int layer = 0; layer < host_model.config.n_layers; ++layer) {  // KV in block 3
    for (bool values : {false, true}) {
      CUDA_CHECK(cudaMemcpy(cache.block_data(layer, 3, values), keys.data(),
                            std::size_t(cache.block_bytes()), cudaMemcpyHostToDevice));
    }
  }
  host.swap_out(cache, {{/*device=*/3, /*host=*/1}}, /*stream=*/0);  // before the pass
  host.swap_in(cache, {{/*device=*/0, /*host=*/1}}, 0);              // block 3's KV in block 0
  CUDA_CHECK(cudaStreamSynchronize(0));
  EXPECT_EQ(cache.to_host({0}, 0, 2, false), keys);
  //! [HostKVPool]
}

TEST(Ch07Examples, ServingWeights) {
  NANOSERVE_REQUIRE_DEVICE();
  const Model model = testing::micro_model(5);  // fp32 host weights, e.g. stories260K
  //! [ServingWeights]
  // `--quant int4-rtn`: chapter 5's INT4 (groups of 32) done at load; RTN needs no data.
  const WeightsSpec spec = parse_weights_spec("int4-rtn");
  const ServingWeights w = load_serving_weights(model, spec, DType::kF32);
  EXPECT_TRUE(w.quantized);
  EXPECT_EQ(w.label, "int4-g32-sym-rtn");
  // The engine runs w.device like any DeviceModel; w.reference is what the oracle checks.
  SchedulerConfig config;
  config.num_kv_blocks = 16;
  config.block_size = 4;
  config.max_model_len = 32;
  ModelExecutor executor(*w.device, executor_options_for(config));
  SimulatedClock clock;
  const ServingRun run = run_continuous({make_request(0, {1, 2, 3}, 4, SamplingParams{0.0f})},
                                        config, executor, clock);
  EXPECT_EQ(run.requests[0].num_output_tokens(), 4);
  //! [ServingWeights]
}

}  // namespace
}  // namespace nanoserve::engine
