// Tensor parallelism's runner in one process (common/engine/model/tensor_parallel_group.h):
// a group of one rank (MPI's singleton mode) runs every collective of the scheme, and its
// logits must equal the whole model's bit for bit — the all-reduces add nothing, the gather
// copies, the residual is added once. The runs of 2 and 4 ranks are in
// tests/ch09/mpi/test_tensor_parallel_mpi.cpp.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/dist/mpi_communicator.h"
#include "common/engine/decode/tensor_parallel_decoder.h"
#include "common/engine/serve/model_executor.h"
#include "common/engine/model/tensor_parallel_group.h"
#include "common/error.h"
#include "common/generation/generate.h"
#include "common/loaders/model_loader.h"
#include "common/loaders/synthetic_model.h"
#include "tests/ch09/tensor_parallel_test_support.h"
#include "tests/test_support.h"

namespace nanoserve::engine {
namespace {

using testing::GreedyRun;

dist::MpiCommunicator& one_rank() {
  static dist::MpiCommunicator comm;
  return comm;
}

TEST(Ch09TensorParallelRunner, TensorParallelGroup) {
  const Model model = make_synthetic_model("tiny");
  dist::Communicator& comm = one_rank();
  //! [TensorParallelGroup]
  // Every rank of `comm` (here one): its shard of the model, and a runner that adds the
  // group's collectives to every pass.
  TensorParallelGroup group(comm, model.config);
  const Model shard = shard_model(model, group.shard());
  const DeviceModel device(shard, DType::kF32);
  RunnerOptions options(/*max_tokens=*/16, /*max_logits=*/1);
  options.tensor_parallel = &group;
  ModelRunner runner(device, options);
  NaiveKVCache cache(shard.config, DType::kF32, /*max_seq_len=*/16);
  const int region = cache.allocate();
  // Rank 0 runs a pass (and broadcasts its plan); ranks > 0 call follow_plans(runner, cache).
  const std::vector<float> logits = runner.forward(
      ForwardBatch::single(region, {1, 7, 42}, 0, LogitRows::kLast), cache);  // (1, vocab)
  group.stop();  // rank 0: the others' follow_plans return
  //! [TensorParallelGroup]
  EXPECT_EQ(logits.size(), std::size_t(model.config.vocab_size));
  EXPECT_EQ(runner.vocab_size(), model.config.vocab_size);
  // 2 L + 1 all-reduces of 3 rows x dim, one all-gather of one row, one plan.
  const TensorParallelGroup::Counters& n = group.counters();
  EXPECT_EQ(n.plans, 1);
  EXPECT_EQ(n.all_reduces, 2 * model.config.n_layers + 1);
  EXPECT_EQ(n.all_reduce_bytes, n.all_reduces * 3 * model.config.dim * 4);
  EXPECT_EQ(n.all_gathers, 1);
  EXPECT_EQ(n.all_gather_bytes, (model.config.vocab_size + 1) * 4);
}

TEST(Ch09TensorParallelRunner, TensorParallelDecoder) {
  const Model model = make_synthetic_model("tiny");
  dist::Communicator& comm = one_rank();
  //! [TensorParallelDecoder]
  // Every rank of `comm` (here one), with the same arguments: its shard, runner and cache.
  TensorParallelDecoder tp(comm, model, /*max_seq_len=*/16, DType::kF32, DType::kF32);
  GenerateResult r;
  if (tp.leads()) {
    GenerateOptions options;
    options.max_new_tokens = 4;
    options.sampling.temperature = 0;  // greedy
    r = generate(tp.decoder(), {1, 7, 42}, options);  // each pass broadcast to the others
    tp.stop();                                        // their follow() returns
  } else {
    tp.follow();
  }
  //! [TensorParallelDecoder]
  const DeviceModel whole(model, DType::kF32);
  NaiveDecoder one(whole, CacheMode::kNaiveCache, 16, DType::kF32);
  GenerateOptions options;
  options.max_new_tokens = 4;
  options.sampling.temperature = 0;
  EXPECT_EQ(r.tokens, generate(one, {1, 7, 42}, options).tokens);
  EXPECT_EQ(tp.group().counters().plans, 4);  // the prompt, then 3 decode steps
  EXPECT_THROW(tp.follow(), InvalidArgument) << "rank 0 does not follow";
}

// One rank holds everything: its logits are the whole model's, bit for bit, step after step.
void expect_bitwise_whole(const Model& model) {
  const std::vector<int> prompt{1, 45, 9, 3, 77, 12, 5};
  const GreedyRun whole = testing::greedy_whole(model, prompt, 6);
  const GreedyRun tp = testing::greedy_tensor_parallel(model, one_rank(), prompt, 6);
  EXPECT_EQ(tp.tokens, whole.tokens);
  ASSERT_EQ(tp.logits.size(), whole.logits.size());
  for (std::size_t s = 0; s < whole.logits.size(); ++s) {
    EXPECT_EQ(tp.logits[s], whole.logits[s]) << "step " << s;
  }
}

TEST(Ch09TensorParallelRunner, OneRankGivesTheWholeModelsLogitsBitForBit) {
  expect_bitwise_whole(make_synthetic_model("tiny"));  // untied classifier
}

TEST(Ch09TensorParallelRunner, OneRankGivesStories260KsLogitsBitForBit) {
  NANOSERVE_REQUIRE_DATA(path, "stories260K.bin");
  expect_bitwise_whole(load_model(path));  // tied classifier: the shard's stays tied
}

TEST(Ch09TensorParallelRunner, ARunnerRefusesAModelThatIsNotItsShard) {
  const Model model = make_synthetic_model("tiny");
  TensorParallelGroup group(one_rank(), model.config);
  const DeviceModel whole(model, DType::kF32);  // not shard_model's: no zero row
  RunnerOptions options(8, 1);
  options.tensor_parallel = &group;
  try {
    ModelRunner runner(whole, options);
    ADD_FAILURE() << "accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("is not the shard of rank 0 of 1"), std::string::npos)
        << e.what();
  }
}

TEST(Ch09TensorParallelRunner, OnlyRankZeroPlansAndOnlyOtherRanksFollow) {
  const Model model = make_synthetic_model("tiny");
  TensorParallelGroup group(one_rank(), model.config);
  const Model shard = shard_model(model, group.shard());
  const DeviceModel device(shard, DType::kF32);
  RunnerOptions options(8, 1);
  options.tensor_parallel = &group;
  ModelRunner runner(device, options);
  NaiveKVCache cache(shard.config, DType::kF32, 8);
  EXPECT_THROW(follow_plans(runner, cache), InvalidArgument);
  EXPECT_THROW(group.receive_plan(), std::logic_error);
  ModelRunner alone(device, RunnerOptions(8, 1));
  EXPECT_THROW(follow_plans(alone, cache), InvalidArgument);
}

// Swaps are copies the executor makes outside a pass: rank 0 would make them alone.
TEST(Ch09TensorParallelRunner, AnExecutorWithAHostPoolIsRefused) {
  const Model model = make_synthetic_model("tiny");
  TensorParallelGroup group(one_rank(), model.config);
  const Model shard = shard_model(model, group.shard());
  const DeviceModel device(shard, DType::kF32);
  ModelExecutorOptions options;
  options.max_tokens_per_step = 8;
  options.num_kv_blocks = 8;
  options.block_size = 4;
  options.num_host_blocks = 4;
  options.tensor_parallel = &group;
  try {
    ModelExecutor executor(device, options);
    ADD_FAILURE() << "accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("num_host_blocks = 4 under tensor parallelism"),
              std::string::npos) << e.what();
  }
  options.num_host_blocks = 0;
  EXPECT_NO_THROW(ModelExecutor(device, options));
}

}  // namespace
}  // namespace nanoserve::engine
