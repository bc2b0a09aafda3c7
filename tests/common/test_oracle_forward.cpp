// The oracle's full forward pass, checked by structure: cached decode == one prompt pass,
// causality, the two RoPE conventions, GQA == repeated-head MHA, rollback, hooks, bad input.
// (test_oracle_forward_naive.cpp compares it with an independent fp64 implementation.)
#include <gtest/gtest.h>

#include <map>
#include <utility>
#include <vector>

#include "common/error.h"
#include "common/oracle/forward.h"
#include "common/oracle/ops.h"
#include "common/tolerances.h"
#include "oracle_test_models.h"

namespace nanoserve::oracle {
namespace {

using nanoserve::testing::random_model;
using nanoserve::testing::tiny_config;

const std::vector<int> kPrompt = {1, 5, 36, 0, 17, 17, 2, 30, 9};

std::vector<float> rows(const std::vector<float>& logits, int first, int count, int vocab) {
  return {logits.begin() + size_t(first) * vocab, logits.begin() + size_t(first + count) * vocab};
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want,
                  const char* what) {
  const CloseResult r = allclose(got, want, tol::kFp32Forward);
  EXPECT_TRUE(r.ok) << what << ": " << r.summary();
}

TEST(OracleForward, PromptPassEqualsTokenByTokenDecode) {
  const Model m = random_model(tiny_config(), 1);
  const int V = m.config.vocab_size;
  const std::vector<float> prompt = forward_prompt(m, kPrompt);
  ASSERT_EQ(prompt.size(), kPrompt.size() * V);
  KVStore kv(m.config);
  for (int t = 0; t < int(kPrompt.size()); ++t) {
    const std::vector<float> step = forward_token(m, kv, kPrompt[t], t);
    expect_close(step, rows(prompt, t, 1, V), "decode step");
    EXPECT_EQ(kv.length(), t + 1);
  }
}

TEST(OracleForward, ChunkedPrefillEqualsOnePass) {
  const Model m = random_model(tiny_config(), 2);
  const int V = m.config.vocab_size;
  const std::vector<float> whole = forward_prompt(m, kPrompt);
  KVStore kv(m.config, 16);
  const std::vector<int> a(kPrompt.begin(), kPrompt.begin() + 4), b(kPrompt.begin() + 4,
                                                                     kPrompt.end());
  expect_close(forward_prompt(m, kv, a, 0), rows(whole, 0, 4, V), "chunk 1");
  expect_close(forward_prompt(m, kv, b, 4), rows(whole, 4, int(b.size()), V), "chunk 2");
}

TEST(OracleForward, FutureTokensDoNotChangeEarlierLogits) {
  const Model m = random_model(tiny_config(), 3);
  const int V = m.config.vocab_size;
  const std::vector<float> whole = forward_prompt(m, kPrompt);
  for (int n : {1, 4}) {
    const std::vector<int> prefix(kPrompt.begin(), kPrompt.begin() + n);
    expect_close(forward_prompt(m, prefix), rows(whole, 0, n, V), "prefix");
  }
  // ...while the last row does depend on the whole prompt (the test can fail).
  std::vector<int> other = kPrompt;
  other[0] = 3;
  const std::vector<float> changed = forward_prompt(m, other);
  EXPECT_FALSE(allclose(rows(changed, 8, 1, V), rows(whole, 8, 1, V), tol::kFp32Forward).ok);
}

TEST(OracleForward, RerunFromEarlierPositionOverwritesTheCachedTail) {
  const Model m = random_model(tiny_config(), 4);
  KVStore kv(m.config);
  forward_prompt(m, kv, kPrompt, 0);
  // Roll back to position 3 and continue differently: identical to a fresh run.
  const std::vector<int> tail = {4, 4, 4};
  const std::vector<float> got = forward_prompt(m, kv, tail, 3);
  EXPECT_EQ(kv.length(), 6);
  const std::vector<int> fresh = {kPrompt[0], kPrompt[1], kPrompt[2], 4, 4, 4};
  expect_close(got, rows(forward_prompt(m, fresh), 3, 3, m.config.vocab_size), "rerun");
}

TEST(OracleForward, RotateHalfModelEqualsAdjacentPairsModelWithPermutedQkRows) {
  // Rotate-half pairs (i, i + hd/2); adjacent pairs (2i, 2i+1). Moving wq/wk row j of each
  // head to row perm[j] makes the adjacent-pairs model rotate exactly the same pairs, and
  // q·k is unchanged by permuting both — so the logits must agree.
  ModelConfig c = tiny_config();
  c.rope_style = RopeStyle::kRotateHalf;
  const Model half = random_model(c, 5);
  Model adj = half;
  adj.config.rope_style = RopeStyle::kAdjacentPairs;
  const int hd = c.head_dim, dim = c.dim;
  auto permute_rows = [&](const std::vector<float>& w, int n_heads) {
    std::vector<float> out(w.size());
    for (int h = 0; h < n_heads; ++h) {
      for (int j = 0; j < hd; ++j) {
        const int to = j < hd / 2 ? 2 * j : 2 * (j - hd / 2) + 1;
        std::copy_n(w.begin() + size_t(h * hd + j) * dim, dim,
                    out.begin() + size_t(h * hd + to) * dim);
      }
    }
    return out;
  };
  for (int l = 0; l < c.n_layers; ++l) {
    adj.layers[l].wq = permute_rows(half.layers[l].wq, c.n_heads);
    adj.layers[l].wk = permute_rows(half.layers[l].wk, c.n_kv_heads);
  }
  expect_close(forward_prompt(adj, kPrompt), forward_prompt(half, kPrompt), "permuted");
  // Without the permutation the conventions really do differ.
  Model unpermuted = half;
  unpermuted.config.rope_style = RopeStyle::kAdjacentPairs;
  EXPECT_FALSE(
      allclose(forward_prompt(unpermuted, kPrompt), forward_prompt(half, kPrompt),
               tol::kFp32Forward).ok);
}

TEST(OracleForward, GqaModelEqualsMhaModelWithRepeatedKvHeads) {
  const ModelConfig c = tiny_config();  // 4 query heads over 2 KV heads
  const Model gqa = random_model(c, 6);
  Model mha = gqa;
  mha.config.n_kv_heads = c.n_heads;
  const size_t head_rows = size_t(c.head_dim) * c.dim;  // floats of one head's rows
  for (int l = 0; l < c.n_layers; ++l) {
    for (auto member : {&LayerWeights::wk, &LayerWeights::wv}) {
      const std::vector<float>& w = gqa.layers[l].*member;
      std::vector<float> rep;
      for (int h = 0; h < c.n_heads; ++h) {
        const size_t g = size_t(h / c.gqa_group());
        rep.insert(rep.end(), w.begin() + g * head_rows, w.begin() + (g + 1) * head_rows);
      }
      mha.layers[l].*member = rep;
    }
  }
  mha.validate();
  expect_close(forward_prompt(mha, kPrompt), forward_prompt(gqa, kPrompt), "gqa vs mha");
}

TEST(OracleForward, HooksSeeEveryLinearInputWithItsShape) {
  const Model m = random_model(tiny_config(), 7);
  const ModelConfig& c = m.config;
  const int T = int(kPrompt.size());
  std::map<std::pair<int, LinearInput>, std::vector<float>> seen;
  std::vector<std::vector<float>> blocks;
  ForwardHooks hooks;
  hooks.on_linear_input = [&](int layer, LinearInput which, const float* x, int r, int cols) {
    const int want_cols = which == LinearInput::kAttentionOut ? c.q_dim()
                          : which == LinearInput::kFfnHidden  ? c.hidden_dim
                                                              : c.dim;
    EXPECT_EQ(r, T);
    EXPECT_EQ(cols, want_cols) << to_string(which);
    EXPECT_TRUE(seen.emplace(std::make_pair(layer, which), std::vector<float>(x, x + r * cols))
                    .second) << "called twice";
  };
  hooks.on_block_output = [&](int, const float* x, int r, int d) {
    blocks.emplace_back(x, x + r * d);
  };
  const std::vector<float> logits = forward_prompt(m, kPrompt, &hooks);
  EXPECT_EQ(seen.size(), size_t(4 * c.n_layers + 1));
  ASSERT_EQ(blocks.size(), size_t(c.n_layers));

  // The classifier's input times the classifier is the logits.
  const auto& cls_in = seen.at({c.n_layers, LinearInput::kClassifier});
  std::vector<float> recomputed(logits.size());
  matmul(cls_in.data(), m.classifier.data(), T, c.dim, c.vocab_size, recomputed.data());
  expect_close(recomputed, logits, "classifier input");
  // Block 1's attention input is block 0's output through block 1's RMSNorm.
  std::vector<float> normed(blocks[0].size());
  rmsnorm(blocks[0].data(), m.layers[1].attn_norm.data(), T, c.dim, c.norm_eps, normed.data());
  EXPECT_EQ(normed, seen.at({1, LinearInput::kAttention}));
}

TEST(OracleForward, RejectsBadTokensPositionsAndMismatchedCache) {
  const Model m = random_model(tiny_config(), 8);
  KVStore kv(m.config, 8);
  EXPECT_THROW(forward_prompt(m, std::vector<int>{}), InvalidArgument);
  EXPECT_THROW(forward_prompt(m, std::vector<int>{1, m.config.vocab_size}), InvalidArgument);
  EXPECT_THROW(forward_token(m, kv, -1, 0), InvalidArgument);
  EXPECT_THROW(forward_token(m, kv, 1, 1), InvalidArgument);  // position 0 never computed
  EXPECT_THROW(forward_prompt(m, kv, std::vector<int>(9, 1), 0), InvalidArgument);  // capacity
  EXPECT_THROW(forward_prompt(m, std::vector<int>(65, 1)), InvalidArgument);  // > max_seq_len
  ModelConfig other = m.config;
  other.n_layers = 1;
  KVStore wrong(other, 8);
  EXPECT_THROW(forward_token(m, wrong, 1, 0), InvalidArgument);
  EXPECT_EQ(kv.length(), 0) << "a rejected call must leave the cache untouched";
}

TEST(OracleKVStore, RejectsCapacityOutsideTheContextAndBadLengths) {
  const ModelConfig c = tiny_config();
  EXPECT_EQ(KVStore(c).capacity(), c.max_seq_len);
  EXPECT_EQ(KVStore(c, 5).bytes(), int64_t(2) * c.n_layers * 5 * c.kv_dim() * 4);
  EXPECT_THROW(KVStore(c, c.max_seq_len + 1), InvalidArgument);
  EXPECT_THROW(KVStore(c, -1), InvalidArgument);
  KVStore kv(c, 5);
  EXPECT_THROW(kv.set_length(6), InvalidArgument);
  EXPECT_THROW(kv.set_length(-1), InvalidArgument);
}

}  // namespace
}  // namespace nanoserve::oracle
