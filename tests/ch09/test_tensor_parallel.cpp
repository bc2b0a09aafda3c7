// Tensor parallelism's shards (common/engine/model/tensor_parallel.h): every rank holds exactly
// 1/N of each sharded tensor, the shards put back together are the model, kv heads are copied
// when there are fewer than ranks, and shapes that cannot be split are refused by name.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/engine/kv/kv_cache_manager.h"
#include "common/engine/model/forward_batch_wire.h"
#include "common/engine/model/tensor_parallel.h"
#include "common/error.h"
#include "common/loaders/synthetic_model.h"

namespace nanoserve::engine {
namespace {

TEST(Ch09TensorParallel, TensorParallelShard) {
  const Model model = make_synthetic_model("tiny");  // 8 q heads, 4 kv heads, hidden 176
  //! [TensorParallelShard]
  const TensorParallelShard s = TensorParallelShard::of(model.config, /*rank=*/1, /*size=*/2);
  // Rank 1 of 2: q heads 4..7, kv heads 2..3, FFN rows 88..175, vocabulary rows 256..511.
  const Model mine = shard_model(model, s);  // a Llama model of its own, run unchanged
  //! [TensorParallelShard]
  EXPECT_EQ(s.q_head_begin, 4);
  EXPECT_EQ(s.kv_head_begin, 2);
  EXPECT_EQ(s.hidden_begin, 88);
  EXPECT_EQ(s.vocab_begin, 256);
  EXPECT_EQ(mine.config.n_heads, 4);
  EXPECT_EQ(mine.config.vocab_size, 257);  // + the zero row
  EXPECT_EQ(s.local_token(300), 44);
  EXPECT_EQ(s.local_token(3), 256);  // another rank's token reads the zero row
}

TEST(Ch09TensorParallel, EveryRankHoldsExactlyItsShareAndTheShardsReassembleTheModel) {
  const Model model = make_synthetic_model("tiny");
  const ModelConfig& c = model.config;
  for (int n : {1, 2, 4, 8}) {
    std::vector<float> wq, w2_row0, emb;
    for (int r = 0; r < n; ++r) {
      const TensorParallelShard s = TensorParallelShard::of(c, r, n);
      const Model m = shard_model(model, s);
      const std::string what = "rank " + std::to_string(r) + " of " + std::to_string(n);
      for (std::size_t l = 0; l < m.layers.size(); ++l) {
        const LayerWeights& w = m.layers[l];
        EXPECT_EQ(w.wq.size() * n, model.layers[l].wq.size()) << what;
        EXPECT_EQ(w.wo.size() * n, model.layers[l].wo.size()) << what;
        EXPECT_EQ(w.w1.size() * n, model.layers[l].w1.size()) << what;
        EXPECT_EQ(w.w2.size() * n, model.layers[l].w2.size()) << what;
        EXPECT_EQ(w.w3.size() * n, model.layers[l].w3.size()) << what;
        // kv heads: split while there are enough, one copied head each when there are not.
        const std::size_t kv = model.layers[l].wk.size() / std::size_t(c.n_kv_heads);
        EXPECT_EQ(w.wk.size(), kv * std::size_t(n <= c.n_kv_heads ? c.n_kv_heads / n : 1)) << what;
        EXPECT_EQ(w.attn_norm, model.layers[l].attn_norm) << what;
      }
      EXPECT_EQ(s.kv_replicated, n > c.n_kv_heads);
      // Reassemble: Wq rows in rank order, W2's first row from its column slices, embedding rows.
      wq.insert(wq.end(), m.layers[0].wq.begin(), m.layers[0].wq.end());
      w2_row0.insert(w2_row0.end(), m.layers[0].w2.begin(), m.layers[0].w2.begin() + s.hidden);
      emb.insert(emb.end(), m.token_embedding.begin(),
                 m.token_embedding.end() - c.dim);  // without the zero row
      for (int i = 0; i < c.dim; ++i) EXPECT_EQ(m.token_embedding[m.token_embedding.size() - 1 - i], 0.0f);
    }
    EXPECT_EQ(wq, model.layers[0].wq) << n;
    EXPECT_EQ(w2_row0, std::vector<float>(model.layers[0].w2.begin(),
                                          model.layers[0].w2.begin() + c.hidden_dim)) << n;
    EXPECT_EQ(emb, model.token_embedding) << n;
  }
}

TEST(Ch09TensorParallel, ReplicatedKvHeadsAreTheOnesTheRanksQueriesRead) {
  const Model model = make_synthetic_model("tiny");  // group of 2 q heads per kv head
  for (int r = 0; r < 8; ++r) {
    const TensorParallelShard s = TensorParallelShard::of(model.config, r, 8);
    EXPECT_EQ(s.kv_head_begin, r / 2) << r;
    const Model m = shard_model(model, s);
    const int hd = model.config.head_dim, d = model.config.dim;
    EXPECT_EQ(m.layers[1].wv, std::vector<float>(model.layers[1].wv.begin() + (r / 2) * hd * d,
                                                 model.layers[1].wv.begin() + (r / 2 + 1) * hd * d));
  }
}

TEST(Ch09TensorParallel, ShapesThatCannotBeSplitAreRefusedByName) {
  const ModelConfig c = make_synthetic_model("tiny").config;
  auto message = [&](int rank, int size) {
    try {
      TensorParallelShard::of(c, rank, size);
    } catch (const InvalidArgument& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(message(0, 3).find("n_heads = 8 is not a multiple"), std::string::npos);
  EXPECT_NE(message(2, 2).find("rank 2 is not in [0, 2)"), std::string::npos);
  ModelConfig odd = c;
  odd.hidden_dim = 170;
  try {
    TensorParallelShard::of(odd, 0, 4);
    ADD_FAILURE();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("hidden_dim = 170"), std::string::npos);
  }
}

TEST(Ch09TensorParallel, APassPlanSurvivesTheWire) {
  const std::vector<int> prompt{1, 5, 9, 4, 3, 8, 8, 2, 6, 1};
  KVCacheManager kv(16, 4, /*enable_prefix_caching=*/false);
  Sequence seq;
  seq.seq_id = 3;
  seq.token_ids = prompt;
  kv.allocate(seq);
  const BlockTable& table = kv.block_table(3);
  //! [encode_batch]
  ForwardBatch batch;
  batch.add_chunk(/*seq=*/3, prompt.data(), 10, /*start_pos=*/0, &table);
  batch.logit_rows = {9};
  batch.block_copies = {BlockCopy{7, 11}};
  // Rank 0 broadcasts this; every rank runs the same pass over its own shard.
  const ForwardBatch received = decode_batch(encode_batch(batch));
  //! [encode_batch]
  EXPECT_EQ(received.tokens, batch.tokens);
  ASSERT_EQ(received.chunks.size(), 1u);
  EXPECT_EQ(received.chunks[0].block_ids, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(received.slot_mapping, batch.slot_mapping);
  EXPECT_EQ(received.logit_rows, batch.logit_rows);
  ASSERT_EQ(received.block_copies.size(), 1u);
  EXPECT_EQ(received.block_copies[0].dst, 11);
  std::vector<std::uint8_t> bytes = encode_batch(batch);
  bytes.pop_back();
  EXPECT_THROW(decode_batch(bytes), InvalidArgument);
}

}  // namespace
}  // namespace nanoserve::engine
