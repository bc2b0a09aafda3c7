// Tensor parallelism under `mpirun -np 2` and `-np 4` (TP = the number of ranks), through the
// kernels on the simulator: greedy tokens equal to the whole model's on one device and logits
// within tol::kTensorParallelFp32 (stories260K: 8 q heads, 4 kv heads — at TP 4 one kv head per
// rank; synthetic:tiny; a multi-query shape whose one kv head is copied onto every rank, with a
// vocabulary that does not divide evenly); chapter 4's continuous batching through a
// tensor-parallel executor on rank 0 gives every request the whole model's tokens; every rank
// holds exactly 1/TP of each sharded tensor and of the KV pool.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdint>
#include <vector>

#include "common/engine/serve/model_executor.h"
#include "common/engine/serve/serving_loop.h"
#include "common/loaders/model_loader.h"
#include "common/loaders/synthetic_model.h"
#include "common/tolerances.h"
#include "tests/ch04/model_test_support.h"
#include "tests/ch09/mpi/mpi_test_support.h"
#include "tests/ch09/tensor_parallel_test_support.h"
#include "tests/test_support.h"

namespace nanoserve::engine {
namespace {

using testing::GreedyRun;
using testing::world;

// Multi-query attention (one kv head, copied onto every rank), a vocabulary of 61 (slices of
// 31/30 rows at TP 2, 16/16/16/13 at TP 4), two layers.
ModelConfig mqa_config() {
  ModelConfig c;
  c.name = "synthetic:mqa";
  c.dim = 32;
  c.hidden_dim = 48;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = 1;
  c.head_dim = 8;
  c.vocab_size = 61;
  c.max_seq_len = 64;
  c.tied_classifier = false;
  return c;
}

// Rank 0: the whole model on its own first, then every rank the tensor-parallel run.
void expect_same_greedy_run(const Model& model, const std::vector<int>& prompt, int steps) {
  GreedyRun whole;
  if (world().rank() == 0) whole = testing::greedy_whole(model, prompt, steps);
  const GreedyRun tp = testing::greedy_tensor_parallel(model, world(), prompt, steps);
  if (world().rank() != 0) return;
  EXPECT_EQ(tp.tokens, whole.tokens) << model.config.name;
  ASSERT_EQ(tp.logits.size(), whole.logits.size());
  for (std::size_t s = 0; s < whole.logits.size(); ++s) {
    const CloseResult r = allclose(tp.logits[s], whole.logits[s], tol::kTensorParallelFp32);
    EXPECT_TRUE(r.ok) << model.config.name << " step " << s << ": " << r.summary();
  }
  std::printf("[ tp %d    ] %s: %d greedy tokens equal, max |dlogit| %.3g\n", world().size(),
              model.config.name.c_str(), steps, testing::max_logit_diff(tp, whole));
}

TEST(Ch09TensorParallelMpi, Stories260KGreedyTokensAndLogitsMatchOneDevice) {
  NANOSERVE_REQUIRE_DATA(path, "stories260K.bin");
  expect_same_greedy_run(load_model(path), {1, 403, 407, 261, 378, 379, 271}, 8);
}

TEST(Ch09TensorParallelMpi, SyntheticGreedyTokensAndLogitsMatchOneDevice) {
  expect_same_greedy_run(make_synthetic_model("tiny"), {1, 45, 9, 300, 77, 12, 5}, 8);
}

TEST(Ch09TensorParallelMpi, ACopiedKvHeadAndAnUnevenVocabularyMatchOneDevice) {
  const Model model = make_synthetic_model(mqa_config(), 7);
  const TensorParallelShard s = TensorParallelShard::of(model.config, world().rank(), world().size());
  EXPECT_TRUE(s.kv_replicated);
  expect_same_greedy_run(model, {1, 5, 60, 33, 2, 17}, 8);
}

TEST(Ch09TensorParallelMpi, ContinuousBatchingOnRankZeroServesTheWholeModelsTokens) {
  const Model model = make_synthetic_model("tiny");
  SchedulerConfig config;
  config.num_kv_blocks = 40;
  config.block_size = 4;
  config.max_model_len = 32;
  config.max_num_batched_tokens = 16;  // prompts are chunked; decodes ride along
  config.max_num_seqs = 4;
  const std::vector<Request> workload =
      testing::model_workload(23, 4, model.config.vocab_size, 18, 5);  // greedy and sampled

  TensorParallelGroup group(world(), model.config);
  const Model shard = shard_model(model, group.shard());
  const DeviceModel device(shard, DType::kF32);
  ModelExecutorOptions options = executor_options_for(config);
  options.tensor_parallel = &group;
  ModelExecutor executor(device, options);
  EXPECT_EQ(executor.kv_cache().pool_bytes() * world().size(),
            PagedKVCache(model.config, DType::kF32, config.num_kv_blocks, config.block_size,
                         config.max_model_len).pool_bytes())
      << "the KV pool is split by kv heads";
  if (world().rank() != 0) {
    EXPECT_GT(executor.follow(), 0);
    return;
  }
  SimulatedClock clock;
  const ServingRun run = run_continuous(workload, config, executor, clock);
  group.stop();

  const DeviceModel whole_device(model, DType::kF32);
  ModelExecutor whole(whole_device, executor_options_for(config));
  SimulatedClock whole_clock;
  const ServingRun want = run_continuous(workload, config, whole, whole_clock);
  ASSERT_EQ(run.requests.size(), want.requests.size());
  for (std::size_t i = 0; i < want.requests.size(); ++i) {
    EXPECT_EQ(run.requests[i].seq.token_ids, want.requests[i].seq.token_ids)
        << "request " << i << (want.requests[i].seq.sampling.greedy() ? " (greedy)" : " (sampled)");
  }
  EXPECT_GT(group.counters().plans, 1);
}

TEST(Ch09TensorParallelMpi, EveryRankHoldsExactlyItsShareOfTheWeights) {
  const Model model = make_synthetic_model("tiny");  // 4 kv heads: split at TP 2 and 4
  const int n = world().size();
  const TensorParallelShard s = TensorParallelShard::of(model.config, world().rank(), n);
  const DeviceModel whole(model, DType::kF32);
  const DeviceModel mine(shard_model(model, s), DType::kF32);
  auto bytes = [](const DeviceLinear& l) {
    std::int64_t b = 0;
    for (const DeviceTensor* t : l.tensors()) b += static_cast<std::int64_t>(t->bytes());
    return b;
  };
  // The sharded tensors: every layer's stacked QKV, Wo, stacked W1|W3 and W2, the embedding and
  // classifier slices (without the zero row that stands for other ranks' tokens).
  std::int64_t sharded = 0, whole_sharded = 0;
  for (int l = 0; l < model.config.n_layers; ++l) {
    const DeviceLayer& a = mine.layer(l);
    const DeviceLayer& w = whole.layer(l);
    for (auto [part, all] : {std::pair{a.wqkv.get(), w.wqkv.get()}, std::pair{a.wo.get(), w.wo.get()},
                             std::pair{a.w13.get(), w.w13.get()}, std::pair{a.w2.get(), w.w2.get()}}) {
      EXPECT_EQ(bytes(*part) * n, bytes(*all)) << "layer " << l;
      sharded += bytes(*part);
      whole_sharded += bytes(*all);
    }
    EXPECT_EQ(a.attn_norm.bytes(), w.attn_norm.bytes());  // replicated
  }
  const std::int64_t row = std::int64_t(model.config.dim) * 4;
  EXPECT_EQ(std::int64_t(mine.token_embedding().bytes()) - row,
            std::int64_t(whole.token_embedding().bytes()) / n);
  EXPECT_EQ(bytes(mine.classifier()) - row, bytes(whole.classifier()) / n);
  std::vector<std::int64_t> sum{sharded};
  world().all_reduce(sum.data(), 1, dist::DataType::kI64, dist::ReduceOp::kSum, nullptr);
  EXPECT_EQ(sum[0], whole_sharded);
}

}  // namespace
}  // namespace nanoserve::engine
