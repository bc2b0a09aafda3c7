// NaiveKVCache + ModelRunner: the cache holds what the oracle caches, requests in different
// regions never touch each other, a mixed batch equals its parts, and bad batches are refused
// before anything changes.
#include <gtest/gtest.h>

#include "common/engine/decode/naive_decoder.h"
#include "common/engine/model/model_runner.h"
#include "common/engine/model/naive_kv_cache.h"
#include "common/error.h"
#include "common/model_bundle.h"
#include "common/oracle/forward.h"
#include "common/tolerances.h"
#include "engine_test_support.h"

namespace nanoserve::engine {
namespace {

class Ch01NaiveKVCache : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!device_available()) GTEST_SKIP() << "no CUDA device";
    model_ = load_model_bundle("synthetic:tiny").model;
    device_ = std::make_unique<DeviceModel>(model_, DType::kF32);
  }
  std::vector<int> tokens(int n, int offset = 0) const {
    std::vector<int> t(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) t[static_cast<std::size_t>(i)] = (37 * (i + offset) + 11) % 512;
    return t;
  }
  Model model_;
  std::unique_ptr<DeviceModel> device_;
};

TEST_F(Ch01NaiveKVCache, HoldsTheKeysAndValuesTheOracleCaches) {
  NaiveKVCache cache(model_.config, DType::kF32, 64, 2);
  ModelRunner runner(*device_, {32, 1});
  const int other = cache.allocate();  // region 0 stays empty: the data must land in region 1 only
  const int region = cache.allocate();
  const std::vector<int> prompt = tokens(20);
  runner.forward(ForwardBatch::single(region, prompt, 0, LogitRows::kLast), cache);

  oracle::KVStore kv(model_.config, 64);
  oracle::forward_prompt(model_, kv, prompt, 0);
  const std::size_t n = prompt.size() * static_cast<std::size_t>(model_.config.kv_dim());
  for (int l = 0; l < model_.config.n_layers; ++l) {
    const std::vector<float> want_k(kv.k(l), kv.k(l) + n);
    const std::vector<float> want_v(kv.v(l), kv.v(l) + n);
    testing::expect_close(cache.to_host(region, l, false), want_k, tol::kFp32Forward,
                          "keys of layer " + std::to_string(l));
    testing::expect_close(cache.to_host(region, l, true), want_v, tol::kFp32Forward,
                          "values of layer " + std::to_string(l));
  }
  EXPECT_EQ(cache.length(region), 20);
  EXPECT_EQ(cache.length(other), 0);
}

TEST_F(Ch01NaiveKVCache, AMixedBatchOfTwoSequencesEqualsRunningThemApart) {
  // Sequence A decodes one token while sequence B prefills a chunk of three — the shape of a
  // continuous-batching step (chapter 4) — in one forward pass.
  const std::vector<int> a = tokens(7), b = tokens(7, 100);
  auto run_apart = [&](std::vector<float>& logits_a, std::vector<float>& logits_b) {
    NaiveKVCache cache(model_.config, DType::kF32, 32, 2);
    ModelRunner runner(*device_, {16, 1});
    const int sa = cache.allocate(), sb = cache.allocate();
    runner.forward(ForwardBatch::single(sa, {a.begin(), a.begin() + 6}, 0, LogitRows::kLast), cache);
    runner.forward(ForwardBatch::single(sb, {b.begin(), b.begin() + 4}, 0, LogitRows::kLast), cache);
    logits_a = runner.forward(ForwardBatch::single(sa, {a[6]}, 6, LogitRows::kLast), cache);
    logits_b = runner.forward(ForwardBatch::single(sb, {b[4], b[5], b[6]}, 4, LogitRows::kLast), cache);
  };
  std::vector<float> want_a, want_b;
  run_apart(want_a, want_b);

  NaiveKVCache cache(model_.config, DType::kF32, 32, 2);
  ModelRunner runner(*device_, {16, 2});
  const int sa = cache.allocate(), sb = cache.allocate();
  runner.forward(ForwardBatch::single(sa, {a.begin(), a.begin() + 6}, 0, LogitRows::kLast), cache);
  runner.forward(ForwardBatch::single(sb, {b.begin(), b.begin() + 4}, 0, LogitRows::kLast), cache);
  ForwardBatch mixed;
  mixed.tokens = {a[6], b[4], b[5], b[6]};
  mixed.chunks = {{sa, 6, 1, {}}, {sb, 4, 3, {}}};
  mixed.logit_rows = {0, 3};
  const std::vector<float> got = runner.forward(mixed, cache);
  const std::size_t vocab = static_cast<std::size_t>(model_.config.vocab_size);
  ASSERT_EQ(got.size(), 2 * vocab);
  testing::expect_close({got.begin(), got.begin() + vocab}, want_a, tol::kFp32Forward, "sequence A");
  testing::expect_close({got.begin() + vocab, got.end()}, want_b, tol::kFp32Forward, "sequence B");
  EXPECT_EQ(cache.length(sa), 7);
  EXPECT_EQ(cache.length(sb), 7);
}

TEST_F(Ch01NaiveKVCache, AccountingIsExactWhileRequestsReallyRun) {
  // synthetic:tiny, fp32: 2 (K, V) × 4 layers × 4 KV heads × 8 head_dim × 4 bytes = 1024 B.
  NaiveKVCache cache(model_.config, DType::kF32, 32, 3);
  ModelRunner runner(*device_, {32, 1});
  EXPECT_EQ(cache.regions().bytes_per_token(), 1024);
  EXPECT_EQ(cache.regions().capacity_bytes(), 3 * 32 * 1024);
  {
    NaiveDecoder first(runner, cache, CacheMode::kNaiveCache);
    NaiveDecoder second(runner, cache, CacheMode::kNaiveCache);
    EXPECT_EQ(cache.regions().reserved_bytes(), 2 * 32 * 1024);  // reserved before any token
    EXPECT_EQ(cache.regions().used_bytes(), 0);
    testing::greedy(first, tokens(5), 4);    // 5 + 4 - 1 = 8 positions cached
    testing::greedy(second, tokens(3), 10);  // 3 + 10 - 1 = 12
    EXPECT_EQ(cache.length(first.region()), 8);
    EXPECT_EQ(cache.length(second.region()), 12);
    EXPECT_EQ(cache.regions().used_bytes(), 20 * 1024);
    EXPECT_DOUBLE_EQ(cache.regions().utilization(), 20.0 / 64.0);
    {
      NaiveDecoder third(runner, cache, CacheMode::kNaiveCache);
      EXPECT_FALSE(cache.can_allocate());
      EXPECT_THROW(NaiveDecoder(runner, cache, CacheMode::kNaiveCache), InvalidArgument);
    }
    EXPECT_EQ(cache.regions().reserved_bytes(), 2 * 32 * 1024);  // the third request returned its region
  }
  EXPECT_EQ(cache.regions().reserved_bytes(), 0);
  EXPECT_EQ(cache.regions().used_bytes(), 0);
}

TEST_F(Ch01NaiveKVCache, RefusesBadBatchesBeforeChangingAnything) {
  NaiveKVCache cache(model_.config, DType::kF32, 16, 1);
  ModelRunner runner(*device_, {8, 1});
  const int s = cache.allocate();
  runner.forward(ForwardBatch::single(s, tokens(4), 0, LogitRows::kLast), cache);
  runner.forward(ForwardBatch::single(s, tokens(8, 4), 4, LogitRows::kLast), cache);
  auto message_in = [&](DeviceKVCache& kv, const ForwardBatch& b) {
    try {
      runner.forward(b, kv);
    } catch (const InvalidArgument& e) {
      return std::string(e.what());
    }
    return std::string("no exception");
  };
  auto message_of = [&](const ForwardBatch& b) { return message_in(cache, b); };
  EXPECT_NE(message_of(ForwardBatch::single(s, tokens(9), 12, LogitRows::kLast))
                .find("exceeds max_tokens_per_step = 8"), std::string::npos);
  EXPECT_NE(message_of(ForwardBatch::single(s, tokens(2), 12, LogitRows::kAll))
                .find("exceed max_logit_rows = 1"), std::string::npos);
  EXPECT_NE(message_of(ForwardBatch::single(s, {600}, 12, LogitRows::kLast))
                .find("token id 600 at row 0 is outside the vocabulary [0, 512)"), std::string::npos);
  EXPECT_NE(message_of(ForwardBatch::single(s, tokens(1), 13, LogitRows::kLast)).find("without a gap"),
            std::string::npos);
  EXPECT_NE(message_of(ForwardBatch::single(s, tokens(5), 12, LogitRows::kLast))
                .find("positions 12..16 of region 0 exceed its 16 reserved positions"),
            std::string::npos);
  EXPECT_EQ(cache.length(s), 12);  // none of the refused batches touched the cache

  ModelConfig other = model_.config;
  other.n_layers = 2;
  NaiveKVCache wrong(other, DType::kF32, 16, 1);
  const int ws = wrong.allocate();
  EXPECT_NE(message_in(wrong, ForwardBatch::single(ws, tokens(2), 0, LogitRows::kLast))
                .find("the KV cache stores 2 layers"), std::string::npos);
}

}  // namespace
}  // namespace nanoserve::engine
