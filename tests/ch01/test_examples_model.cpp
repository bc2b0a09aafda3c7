// Examples of use of chapter 1's engine types: the device model and its linears, the forward
// pass (`ModelRunner`, `ForwardBatch`), the contiguous KV cache and its bookkeeping, and
// `NaiveDecoder`. Each TEST is one example: the code between its `//! [Name]` markers is what
// the type's documentation shows (Doxygen \snippet), and the test asserts what the example
// claims, so the documentation cannot go stale. Checks that the reader need not see (against
// the oracle) follow the closing marker. Device examples run on the simulator in the sim build.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "common/engine/decode/naive_decoder.h"
#include "common/engine/kv/kv_memory.h"
#include "common/engine/kv/kv_region_table.h"
#include "common/engine/model/device_model.h"
#include "common/engine/model/forward_batch.h"
#include "common/engine/model/model_runner.h"
#include "common/engine/model/naive_kv_cache.h"
#include "common/error.h"
#include "common/generation/generate.h"
#include "common/loaders/synthetic_model.h"
#include "common/model_bundle.h"
#include "common/oracle/forward.h"
#include "common/tolerances.h"
#include "engine_test_support.h"

namespace nanoserve::engine {
namespace {

TEST(Ch01Examples, ForwardBatch) {
  //! [ForwardBatch]
  // One pass over two sequences: sequence 0's prompt (3 rows), sequence 1's decode (1 row).
  ForwardBatch batch;
  const int prompt[] = {5, 6, 7};
  const int last_sampled[] = {9};
  batch.add_chunk(/*seq=*/0, prompt, 3, /*start_pos=*/0);
  batch.add_chunk(/*seq=*/1, last_sampled, 1, /*start_pos=*/41);
  batch.logit_rows = {2, 3};  // the last row of each chunk: both sample a token
  batch.validate(/*vocab_size=*/512);

  EXPECT_EQ(batch.rows(), 4);
  EXPECT_EQ(batch.positions(), (std::vector<int>{0, 1, 2, 41}));
  const SequenceChunk& decode = batch.chunks[1];
  EXPECT_EQ(decode.seq, 1);
  EXPECT_EQ(decode.start_pos, 41);
  EXPECT_EQ(decode.num_tokens, 1);
  EXPECT_TRUE(decode.block_ids.empty());  // no block table: a naive (contiguous) cache

  batch.logit_rows = {3, 2};  // not ascending
  EXPECT_THROW(batch.validate(512), InvalidArgument);
  //! [ForwardBatch]
}

TEST(Ch01Examples, KVRegionTable) {
  //! [KVRegionTable]
  KVRegionTable regions(/*num_regions=*/3, /*max_seq_len=*/16, /*bytes_per_token=*/1024);
  const int a = regions.allocate();  // region 0, reserved whole
  const int b = regions.allocate();  // region 1
  regions.check_write(a, 0, 6);
  regions.write(a, 0, 6);            // a's prompt: positions 0..5
  regions.write(b, 0, 2);

  EXPECT_EQ(regions.reserved_bytes(), 2 * 16 * 1024);  // two regions, in full
  EXPECT_EQ(regions.used_bytes(), (6 + 2) * 1024);     // the positions really filled
  EXPECT_DOUBLE_EQ(regions.utilization(), 8.0 / 32.0);
  EXPECT_THROW(regions.check_write(b, 5, 1), InvalidArgument);  // a gap after position 1

  regions.free(a);
  EXPECT_EQ(regions.allocate(), 0);  // the lowest free region
  //! [KVRegionTable]
}

TEST(Ch01Examples, KvMemoryEstimate) {
  //! [KvMemoryEstimate]
  const KvMemoryEstimate e = estimate_kv_memory(synthetic_config("llama3-8b"),
                                                /*bytes_per_element=*/2, /*context=*/8192,
                                                /*batch=*/4);
  // 2 (K and V) × 32 layers × 8 KV heads × head_dim 128 × 2 bytes (bf16)
  EXPECT_EQ(e.bytes_per_token, 2LL * 32 * 8 * 128 * 2);  // 128 KiB
  EXPECT_EQ(e.bytes_per_request, e.bytes_per_token * 8192);  // 1 GiB
  EXPECT_EQ(e.bytes_per_batch, 4 * e.bytes_per_request);
  // Counting all 32 query heads instead of the 8 KV heads (no GQA) claims 4× too much.
  EXPECT_EQ(e.bytes_per_token_without_gqa, 4 * e.bytes_per_token);
  //! [KvMemoryEstimate]
}

/// The smallest model the engine tests use (synthetic:tiny: 4 layers, vocabulary 512).
class Ch01DeviceExamples : public ::testing::Test {
 protected:
  void SetUp() override {
    NANOSERVE_REQUIRE_DEVICE();
    model_ = load_model_bundle("synthetic:tiny").model;
  }
  Model model_;
};

TEST_F(Ch01DeviceExamples, DeviceTensor) {
  //! [DeviceTensor]
  const DeviceTensor t({1.0f, 0.1f, -2.5f}, DType::kF16);  // rounded once, then uploaded
  EXPECT_EQ(t.numel(), 3u);
  EXPECT_EQ(t.bytes(), 6u);

  const std::vector<float> back = t.to_host_floats();
  EXPECT_EQ(back[0], 1.0f);
  EXPECT_EQ(back[2], -2.5f);
  EXPECT_NE(back[1], 0.1f);  // 0.1 is not a binary fraction: fp16 holds 0.0999755859375
  EXPECT_NEAR(back[1], 0.1f, 1e-4f);

  const DeviceTensor tied = t;  // a copy shares the device memory (a tied classifier)
  EXPECT_EQ(tied.storage_id(), t.storage_id());
  EXPECT_THROW(t.data<float>(), InvalidArgument);  // typed access checks the storage type
  //! [DeviceTensor]
}

TEST_F(Ch01DeviceExamples, DenseLinear) {
  //! [DenseLinear]
  // W (2, 3) = [[1 2 3], [4 5 6]], row-major; two input rows.
  const DenseLinear linear(DeviceTensor({1, 2, 3, 4, 5, 6}, DType::kF32), 2, 3);
  const DeviceBuffer<float> x(std::vector<float>{1, 0, 0,    // (2, 3)
                                                 0, 1, 1});
  DeviceBuffer<float> y(4);                                   // (2, 2)
  linear.apply(x.get(), y.get(), /*rows=*/2, /*stream=*/0, Epilogue::kStore);
  EXPECT_EQ(y.to_host(), (std::vector<float>{1, 4, 5, 11}));
  EXPECT_EQ(linear.format(), "fp32");
  //! [DenseLinear]
}

TEST_F(Ch01DeviceExamples, DeviceLayer) {
  const Model& model = model_;
  //! [DeviceLayer]
  const DeviceModel device(model, DType::kF16);
  const DeviceLayer& block = device.layer(0);
  EXPECT_EQ(block.attn_norm.numel(), static_cast<size_t>(model.config.dim));
  // The linears, each behind the DeviceLinear interface: shape and format only. Wq, Wk, Wv
  // are stacked into one QKV projection (fewer KV heads: GQA), W1 and W3 into one gate+up.
  const DeviceLinear& wqkv = *block.wqkv;
  EXPECT_EQ(wqkv.out_features(), model.config.q_dim() + 2 * model.config.kv_dim());
  EXPECT_EQ(wqkv.in_features(), model.config.dim);
  EXPECT_EQ(block.w13->out_features(), 2 * model.config.hidden_dim);
  EXPECT_EQ(block.wq, nullptr);  // the parts live on only inside the stacked matrices
  for (const DeviceLinear* w : block.linears()) EXPECT_EQ(w->format(), "fp16");
  EXPECT_EQ(block.bq.numel(), 0u);  // no attention bias in a Llama config
  //! [DeviceLayer]
}

TEST_F(Ch01DeviceExamples, DeviceModel) {
  const Model& model = model_;
  //! [DeviceModel]
  const DeviceModel fp32(model, DType::kF32);
  const DeviceModel fp16(model, DType::kF16);
  EXPECT_EQ(fp16.config().n_layers, model.config.n_layers);
  EXPECT_EQ(fp16.weight_format(), "fp16");
  EXPECT_EQ(fp16.classifier().out_features(), model.config.vocab_size);
  EXPECT_EQ(fp32.weight_bytes(), 2 * fp16.weight_bytes());  // every tensor, norms included
  //! [DeviceModel]
}

TEST_F(Ch01DeviceExamples, ModelRunner) {
  const Model& model = model_;
  //! [ModelRunner]
  const DeviceModel device(model, DType::kF32);
  RunnerOptions options;
  options.max_tokens_per_step = 64;  // buffers for up to 64 rows per pass
  options.max_logit_rows = 1;
  ModelRunner runner(device, options);
  NaiveKVCache cache(model.config, DType::kF32, /*max_seq_len=*/64);
  const int region = cache.allocate();

  // Prefill the prompt, pick the most likely next token, decode it.
  const std::vector<int> prompt = {1, 20, 30};
  std::vector<float> logits =
      runner.forward(ForwardBatch::single(region, prompt, 0, LogitRows::kLast), cache);
  const int next = int(std::max_element(logits.begin(), logits.end()) - logits.begin());
  logits = runner.forward(ForwardBatch::single(region, {next}, 3, LogitRows::kLast), cache);
  EXPECT_EQ(logits.size(), static_cast<size_t>(model.config.vocab_size));
  EXPECT_EQ(cache.length(region), 4);
  //! [ModelRunner]
  const std::vector<float> want = oracle::forward_prompt(model, {1, 20, 30, next});
  const std::size_t vocab = static_cast<std::size_t>(model.config.vocab_size);
  testing::expect_close(logits, std::vector<float>(want.end() - vocab, want.end()),
                        tol::kFp32Forward, "decode logits vs the oracle");
}

TEST_F(Ch01DeviceExamples, NaiveKVCache) {
  const Model& model = model_;
  //! [NaiveKVCache]
  const DeviceModel device(model, DType::kF32);
  ModelRunner runner(device);
  NaiveKVCache cache(model.config, DType::kF32, /*max_seq_len=*/64, /*num_regions=*/2);
  const int a = cache.allocate();  // region 0
  const int b = cache.allocate();  // region 1
  EXPECT_FALSE(cache.can_allocate());

  runner.forward(ForwardBatch::single(a, {1, 20, 30, 40}, 0, LogitRows::kLast), cache);
  EXPECT_EQ(cache.length(a), 4);
  EXPECT_EQ(cache.length(b), 0);
  // Both regions are reserved whole, yet only 4 of their 128 positions are used.
  const KVRegionTable& regions = cache.regions();
  EXPECT_EQ(regions.bytes_per_token(), 2 * model.config.n_layers * model.config.kv_dim() * 4);
  EXPECT_EQ(regions.reserved_bytes(), 2 * 64 * regions.bytes_per_token());
  EXPECT_DOUBLE_EQ(regions.utilization(), 4.0 / 128.0);

  cache.truncate(a, 2);  // forget positions 2..
  EXPECT_EQ(cache.length(a), 2);
  cache.free(b);
  EXPECT_TRUE(cache.can_allocate());
  //! [NaiveKVCache]
}

TEST_F(Ch01DeviceExamples, NaiveDecoder) {
  const Model& model = model_;
  //! [NaiveDecoder]
  const DeviceModel device(model, DType::kF32);
  NaiveDecoder cached(device, CacheMode::kNaiveCache);
  NaiveDecoder uncached(device, CacheMode::kNoCache);
  GenerateOptions greedy;
  greedy.max_new_tokens = 8;
  greedy.sampling.temperature = 0.0f;

  const std::vector<int> prompt = {1, 20, 30};
  const GenerateResult with_cache = generate(cached, prompt, greedy);
  const GenerateResult without = generate(uncached, prompt, greedy);
  EXPECT_EQ(with_cache.tokens, without.tokens);  // the same tokens, for very different work:
  EXPECT_EQ(cached.rows_computed(), 3 + 7);      // the prompt once, then one row per token
  EXPECT_EQ(uncached.rows_computed(), 3 + 4 + 5 + 6 + 7 + 8 + 9 + 10);  // every prefix again
  //! [NaiveDecoder]
}

}  // namespace
}  // namespace nanoserve::engine
