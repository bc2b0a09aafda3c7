// CUDA graphs over paged KV (ModelRunner with cuda_graphs + PagedKVCache): decode steps whose
// batch sizes hit several buckets, padded, give the tokens and the cached K/V of eager launches;
// each bucket is captured once and replayed while sequences grow into new blocks; the padding
// rows write no KV anywhere; and a graph is captured again when it would read another cache or a
// workspace that has moved.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "ch01/engine_test_support.h"
#include "common/engine/kv/kv_cache_manager.h"
#include "common/engine/model/model_runner.h"
#include "common/engine/model/paged_kv_cache.h"
#include "common/model_bundle.h"
#include "common/sampling/sampler.h"
#include "common/tolerances.h"
#include "test_support.h"

namespace nanoserve::engine {
namespace {

constexpr int kSeqs = 6;
constexpr int kBlockSize = 4;
constexpr int kBlocks = 64;
constexpr int kMaxSeqLen = 64;

// Every sequence's tokens and its layer-0 keys and last-layer values, and the runner's counters.
struct DecodeRun {
  std::vector<std::vector<int>> tokens;
  std::vector<std::vector<float>> kv;
  StepCounters counters;
  std::vector<float> spare_block;  // keys of the pool's last block, which no sequence owns
};

class Ch02DecodeGraphs : public ::testing::Test {
 protected:
  void SetUp() override {
    NANOSERVE_REQUIRE_DEVICE();
    model_ = load_model_bundle("synthetic:tiny").model;
    device_ = std::make_unique<DeviceModel>(model_, DType::kF32);
  }

  // Prefills kSeqs prompts of different lengths in one (eager) pass, then runs one greedy
  // decode step per entry of `sizes` over that many sequences, a window rotating over them.
  DecodeRun run(bool graphs, const std::vector<int>& sizes) const {
    KVCacheManager manager(kBlocks, kBlockSize, false);
    PagedKVCache cache(model_.config, DType::kF32, kBlocks, kBlockSize, kMaxSeqLen);
    RunnerOptions options{64, 8};
    options.cuda_graphs = graphs;  // buckets 1, 2, 4, 8
    ModelRunner runner(*device_, options);
    std::vector<Sequence> seqs(kSeqs);
    ForwardBatch prefill;
    for (int i = 0; i < kSeqs; ++i) {
      Sequence& s = seqs[std::size_t(i)];
      s.seq_id = i;
      for (int p = 0; p < 3 + 2 * i; ++p) s.token_ids.push_back((37 * p + 11 * i + 1) % 512);
      manager.allocate(s);
      prefill.add_chunk(i, s.token_ids.data(), s.num_tokens(), 0, &manager.block_table(i));
      prefill.logit_rows.push_back(prefill.rows() - 1);
    }
    append_argmax(runner.forward(prefill, cache), seqs, {0, 1, 2, 3, 4, 5});
    for (std::size_t step = 0; step < sizes.size(); ++step) {
      std::vector<int> chosen;
      ForwardBatch batch;
      for (int j = 0; j < sizes[step]; ++j) {
        const int i = int((step + std::size_t(j)) % kSeqs);
        Sequence& s = seqs[std::size_t(i)];
        EXPECT_TRUE(manager.append_slot(s).empty());  // the sampled token gets its slot
        batch.add_chunk(i, &s.token_ids.back(), 1, s.num_tokens() - 1, &manager.block_table(i));
        batch.logit_rows.push_back(j);
        chosen.push_back(i);
      }
      append_argmax(runner.forward(batch, cache), seqs, chosen);
    }
    DecodeRun r;
    for (const Sequence& s : seqs) {
      r.tokens.push_back(s.token_ids);
      const std::vector<int>& table = manager.block_table(s.seq_id).block_ids();
      const int cached = s.num_tokens() - 1;  // the last sampled token has no K/V yet
      r.kv.push_back(cache.to_host(table, 0, cached, false));
      r.kv.push_back(cache.to_host(table, model_.config.n_layers - 1, cached, true));
    }
    r.counters = runner.counters();
    r.spare_block = cache.to_host({kBlocks - 1}, 0, kBlockSize, false);
    return r;
  }

  void append_argmax(const std::vector<float>& logits, std::vector<Sequence>& seqs,
                     const std::vector<int>& rows_to_seqs) const {
    const int vocab = model_.config.vocab_size;
    for (std::size_t r = 0; r < rows_to_seqs.size(); ++r) {
      seqs[std::size_t(rows_to_seqs[r])].token_ids.push_back(
          argmax(logits.data() + r * std::size_t(vocab), vocab));
    }
  }

  Model model_;
  std::unique_ptr<DeviceModel> device_;
};

TEST_F(Ch02DecodeGraphs, PaddedBucketsGiveTheTokensAndKVOfEagerLaunches) {
  // Batch sizes 3, 5, 1, 6, 2, 4 (buckets 4, 8, 1, 8, 2, 4: 6 padding rows) twice: every
  // sequence decodes 6 to 8 tokens, crossing block boundaries (blocks of 4) between replays.
  const std::vector<int> sizes = {3, 5, 1, 6, 2, 4, 3, 5, 1, 6, 2, 4};
  const DecodeRun eager = run(false, sizes);
  const DecodeRun graphs = run(true, sizes);
  for (int i = 0; i < kSeqs; ++i) {
    EXPECT_EQ(graphs.tokens[std::size_t(i)], eager.tokens[std::size_t(i)]) << "sequence " << i;
  }
  // Graph passes pick kernels for their padded row counts: equal up to summation order.
  for (std::size_t i = 0; i < eager.kv.size(); ++i) {
    testing::expect_close(graphs.kv[i], eager.kv[i], tol::kFp32Forward,
                          "K/V of sequence " + std::to_string(i / 2));
  }
  const StepCounters& c = graphs.counters;
  EXPECT_EQ(c.passes, 13);
  EXPECT_EQ(c.eager_passes, 1);  // the prefill
  EXPECT_EQ(c.graph_captures, 4);
  EXPECT_EQ(c.graph_replays, 12);
  EXPECT_EQ(c.graph_updates, 0);
  EXPECT_EQ(c.padding_rows, 12);
  EXPECT_EQ(c.uploads, 13);  // one per pass
  EXPECT_EQ(eager.counters.eager_passes, 13);
  EXPECT_EQ(eager.counters.graph_replays, 0);
  // Padding rows have slot -1: they wrote nowhere, not even into a block nobody owns (the
  // simulator's fresh device memory reads as NaN until written).
  if (!NANOSERVE_REAL_CUDA) {
    for (float x : graphs.spare_block) EXPECT_TRUE(std::isnan(x));
  }
}

// One sequence decoding alone through positions 3..10 (blocks of 4): its block table gains a
// block twice, and the same graph replays throughout (tables are staged at full width).
TEST_F(Ch02DecodeGraphs, ASequenceGrowsIntoNewBlocksWhileOneGraphReplays) {
  KVCacheManager manager(8, kBlockSize, false);
  PagedKVCache cache(model_.config, DType::kF32, 8, kBlockSize, 32);
  RunnerOptions options{16, 1};
  options.cuda_graphs = true;
  ModelRunner runner(*device_, options);
  ModelRunner eager(*device_, {16, 1});
  KVCacheManager eager_manager(8, kBlockSize, false);
  PagedKVCache eager_cache(model_.config, DType::kF32, 8, kBlockSize, 32);
  Sequence s, t;
  s.seq_id = t.seq_id = 0;
  s.token_ids = t.token_ids = {1, 60, 7};
  manager.allocate(s);
  eager_manager.allocate(t);
  const int vocab = model_.config.vocab_size;
  const auto next = [&](ModelRunner& r, KVCacheManager& m, PagedKVCache& c, Sequence& q,
                        bool prompt) {
    const int n = prompt ? q.num_tokens() : 1;
    const ForwardBatch b = ForwardBatch::single(
        0, std::vector<int>(q.token_ids.end() - n, q.token_ids.end()), q.num_tokens() - n,
        LogitRows::kLast, &m.block_table(0));
    const std::vector<float> logits = r.forward(b, c);
    q.token_ids.push_back(argmax(logits.data(), vocab));
  };
  next(runner, manager, cache, s, true);
  next(eager, eager_manager, eager_cache, t, true);
  for (int step = 0; step < 8; ++step) {
    EXPECT_TRUE(manager.append_slot(s).empty());
    EXPECT_TRUE(eager_manager.append_slot(t).empty());
    next(runner, manager, cache, s, false);
    next(eager, eager_manager, eager_cache, t, false);
  }
  EXPECT_EQ(s.token_ids, t.token_ids);
  EXPECT_EQ(manager.block_table(0).block_ids().size(), 3u);  // positions 0..10: three blocks
  EXPECT_EQ(runner.counters().graph_captures, 1);
  EXPECT_EQ(runner.counters().graph_replays, 8);
  EXPECT_EQ(runner.counters().graph_updates, 0);
}

// A graph bakes in the cache's pools and its staged metadata; decoding into another cache with
// the same runner must capture the bucket again, not replay into the first cache's pools.
TEST_F(Ch02DecodeGraphs, AnotherCacheCapturesTheBucketAgain) {
  RunnerOptions options{16, 1};
  options.cuda_graphs = true;
  ModelRunner runner(*device_, options);
  ModelRunner eager(*device_, {16, 1});
  const std::vector<int> prompt = {1, 5, 9, 13, 2};
  std::vector<std::vector<int>> got, want;
  for (ModelRunner* r : {&runner, &eager}) {
    std::vector<std::unique_ptr<PagedKVCache>> caches;
    std::vector<std::unique_ptr<KVCacheManager>> managers;
    std::vector<Sequence> seqs(2);
    for (int c = 0; c < 2; ++c) {  // one sequence per cache, prefilled
      caches.push_back(
          std::make_unique<PagedKVCache>(model_.config, DType::kF32, 8, kBlockSize, 32));
      managers.push_back(std::make_unique<KVCacheManager>(8, kBlockSize, false));
      seqs[std::size_t(c)].token_ids = prompt;
      seqs[std::size_t(c)].token_ids[1] += c;
      managers.back()->allocate(seqs[std::size_t(c)]);
      const std::vector<float> l = r->forward(
          ForwardBatch::single(0, seqs[std::size_t(c)].token_ids, 0, LogitRows::kLast,
                               &managers.back()->block_table(0)),
          *caches.back());
      seqs[std::size_t(c)].token_ids.push_back(argmax(l.data(), model_.config.vocab_size));
    }
    for (int step = 0; step < 4; ++step) {  // decode alternating between the two caches
      const std::size_t c = std::size_t(step % 2);
      Sequence& s = seqs[c];
      EXPECT_TRUE(managers[c]->append_slot(s).empty());
      const std::vector<float> l = r->forward(
          ForwardBatch::single(0, {s.token_ids.back()}, s.num_tokens() - 1, LogitRows::kLast,
                               &managers[c]->block_table(0)),
          *caches[c]);
      s.token_ids.push_back(argmax(l.data(), model_.config.vocab_size));
    }
    (r == &runner ? got : want) = {seqs[0].token_ids, seqs[1].token_ids};
  }
  EXPECT_EQ(got, want);
  EXPECT_EQ(runner.counters().graph_captures, 1);
  EXPECT_EQ(runner.counters().graph_updates, 3);  // each switch of cache
  EXPECT_EQ(runner.counters().graph_replays, 4);
}

// stories260K's context of 512 positions makes paged decode split its keys (flash-decoding),
// with a workspace sized by the batch: the 2-row bucket grows it, so the 1-row graph, which
// baked in the old workspace's address, must be captured again before it replays.
TEST(Ch02DecodeGraphsStories, AWorkspaceThatMovedCapturesTheSmallerBucketAgain) {
  NANOSERVE_REQUIRE_DEVICE();
  NANOSERVE_REQUIRE_DATA(path, "stories260K.bin");
  const Model model = load_model_bundle(path).model;
  const DeviceModel device(model, DType::kF32);
  const int vocab = model.config.vocab_size;
  std::vector<std::vector<int>> got;
  StepCounters counters;
  for (bool graphs : {true, false}) {
    KVCacheManager manager(16, 16, false);
    PagedKVCache cache(model.config, DType::kF32, 16, 16);  // max_seq_len: the model's 512
    RunnerOptions options{16, 2};
    options.cuda_graphs = graphs;
    ModelRunner runner(device, options);
    std::vector<Sequence> seqs(2);
    for (int i = 0; i < 2; ++i) {
      seqs[std::size_t(i)].seq_id = i;
      seqs[std::size_t(i)].token_ids = {1, 40 + i, 300, 7};
      manager.allocate(seqs[std::size_t(i)]);
      const std::vector<float> l = runner.forward(
          ForwardBatch::single(i, seqs[std::size_t(i)].token_ids, 0, LogitRows::kLast,
                               &manager.block_table(i)),
          cache);
      seqs[std::size_t(i)].token_ids.push_back(argmax(l.data(), vocab));
    }
    for (int size : {1, 2, 1}) {  // buckets 1, 2, 1
      ForwardBatch batch;
      for (int i = 0; i < size; ++i) {
        Sequence& s = seqs[std::size_t(i)];
        EXPECT_TRUE(manager.append_slot(s).empty());
        batch.add_chunk(i, &s.token_ids.back(), 1, s.num_tokens() - 1, &manager.block_table(i));
        batch.logit_rows.push_back(i);
      }
      const std::vector<float> l = runner.forward(batch, cache);
      for (int i = 0; i < size; ++i) {
        seqs[std::size_t(i)].token_ids.push_back(argmax(l.data() + std::size_t(i) * vocab, vocab));
      }
    }
    if (graphs) counters = runner.counters();
    got.push_back(seqs[0].token_ids);
    got.push_back(seqs[1].token_ids);
  }
  EXPECT_EQ(got[0], got[2]);
  EXPECT_EQ(got[1], got[3]);
  EXPECT_EQ(counters.graph_captures, 2);
  EXPECT_EQ(counters.graph_updates, 1);  // bucket 1 after bucket 2 grew the workspace
  EXPECT_EQ(counters.graph_replays, 3);
}

}  // namespace
}  // namespace nanoserve::engine
