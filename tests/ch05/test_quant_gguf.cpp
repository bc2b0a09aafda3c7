// `nanoserve quantize --out FILE.gguf` (common/quant/quant_gguf.h): int4/int8 with groups of 32,
// symmetric, are written code for code as Q4_0/Q8_0, so the file nanoserve's GGUF loader reads
// back IS QuantizedModel::dequantize() — bit for bit, through the wq/wk row permutation of a
// rotate-half llama; AWQ's folded norms are what is written; Q4_K files load and generate;
// what GGUF cannot store is refused by name. llama.cpp running these files: tests/peer/.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>

#include "common/error.h"
#include "common/loaders/ggml_types.h"
#include "common/loaders/gguf_export.h"
#include "common/loaders/gguf_file.h"
#include "common/loaders/gguf_loader.h"
#include "common/loaders/gguf_quant_blocks.h"
#include "common/oracle/forward.h"
#include "common/oracle/kv_store.h"
#include "common/quant/quant_gguf.h"
#include "common/quant/quantize_model.h"
#include "quant_test_support.h"
#include "test_support.h"

namespace nanoserve {
namespace {

using quant::LinearId;

/// A llama with Hugging Face's rotate-half RoPE (so wq/wk rows are permuted on export) whose
/// rows are whole 32-blocks (`k256`: 256-blocks).
Model rotate_half_model(bool k256, uint64_t seed = 4) {
  ModelConfig c;
  c.name = k256 ? "k256" : "g32";
  c.dim = k256 ? 256 : 64;
  c.hidden_dim = k256 ? 512 : 96;
  c.n_layers = k256 ? 1 : 2;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = c.dim / 4;
  c.vocab_size = 48;
  c.max_seq_len = 32;
  c.tied_classifier = false;
  c.rope_style = RopeStyle::kRotateHalf;
  return make_synthetic_model(c, seed);
}

GgufVocabulary vocab_of(int n) {
  GgufVocabulary v;
  v.model = "llama";
  for (int i = 0; i < n; ++i) {
    v.tokens.push_back("t" + std::to_string(i));
    v.scores.push_back(0.0f);
    v.token_types.push_back(GgufTokenType::kNormal);
  }
  return v;
}

quant::QuantizedModel quantize(const Model& m, quant::QuantMethod method, int bits, int group,
                               bool symmetric = true, bool act_order = false) {
  quant::QuantizeOptions o;
  o.method = method;
  o.scheme = quant::QuantScheme{bits, group, symmetric};
  o.gptq.act_order = act_order;
  return quant::quantize_model(m, testing::random_sequences(7, 4, 24, m.config.vocab_size), o);
}

/// Every fp32 tensor of `got` and `want` (same shapes), by name.
void each_tensor(const Model& got, const Model& want,
                 const std::function<void(const std::string&, const std::vector<float>&,
                                          const std::vector<float>&)>& fn) {
  fn("token_embedding", got.token_embedding, want.token_embedding);
  fn("final_norm", got.final_norm, want.final_norm);
  fn("classifier", got.classifier, want.classifier);
  for (size_t l = 0; l < want.layers.size(); ++l) {
    const std::string p = "layer " + std::to_string(l) + " ";
    fn(p + "attn_norm", got.layers[l].attn_norm, want.layers[l].attn_norm);
    fn(p + "ffn_norm", got.layers[l].ffn_norm, want.layers[l].ffn_norm);
    for (LinearId id : quant::kLinearIds) {
      fn(p + quant::to_string(id), quant::linear_weights(got.layers[l], id),
         quant::linear_weights(want.layers[l], id));
    }
  }
}

void expect_bitwise(const Model& got, const Model& want, const std::string& what) {
  each_tensor(got, want, [&](const std::string& name, const std::vector<float>& g,
                             const std::vector<float>& w) {
    ASSERT_EQ(g.size(), w.size()) << what << " " << name;
    EXPECT_EQ(std::memcmp(g.data(), w.data(), 4 * w.size()), 0) << what << " " << name;
  });
}

TEST(QuantGguf, Int4AndInt8Group32LoadBackAsTheDequantizedModelBitForBit) {
  const Model m = rotate_half_model(false);
  for (quant::QuantMethod method : {quant::QuantMethod::kRtn, quant::QuantMethod::kGptq}) {
    for (int bits : {4, 8}) {
      const quant::QuantizedModel q = quantize(m, method, bits, 32);
      const std::string what = std::string(quant::to_string(method)) + " int" + std::to_string(bits);
      const std::vector<uint8_t> bytes = quant::export_quantized_gguf(q, vocab_of(48));
      const GgufFile f = parse_gguf(bytes.data(), bytes.size(), "q.gguf");
      const uint32_t type = bits == 4 ? kGgmlTypeQ4_0 : kGgmlTypeQ8_0;
      EXPECT_EQ(f.find_tensor("blk.1.attn_k.weight")->type->id, type) << what;
      EXPECT_EQ(f.find_tensor("blk.0.ffn_down.weight")->type->id, type) << what;
      EXPECT_EQ(f.find_tensor("token_embd.weight")->type->id, kGgmlTypeF32) << what;
      EXPECT_EQ(f.find_tensor("output.weight")->type->id, kGgmlTypeF32) << what;
      const Model got = model_from_gguf(f);
      EXPECT_EQ(got.config.rope_style, RopeStyle::kAdjacentPairs);
      // The GGUF layout of the dequantized model: wq/wk rows permuted for adjacent pairs.
      expect_bitwise(got, gguf_layout(q.dequantize()), what);
    }
  }
}

TEST(QuantGguf, AwqWritesTheNormsItFoldedItsScalesInto) {
  const Model m = rotate_half_model(false);
  const quant::QuantizedModel q = quantize(m, quant::QuantMethod::kAwq, 4, 32);
  const std::vector<uint8_t> bytes = quant::export_quantized_gguf(q, vocab_of(48));
  const Model got = load_gguf_from_memory(bytes.data(), bytes.size(), "awq.gguf");
  expect_bitwise(got, gguf_layout(q.dequantize()), "awq");
  bool folded = false;  // AWQ divided at least one norm by its scales: not the original's
  for (size_t l = 0; l < m.layers.size(); ++l) folded |= got.layers[l].attn_norm != m.layers[l].attn_norm;
  EXPECT_TRUE(folded);
}

TEST(QuantGguf, Q4_KLinearsLoadAndGenerate) {
  const Model m = rotate_half_model(true);
  const std::vector<uint8_t> bytes = quant::export_q4_k_gguf(m, vocab_of(48));
  const GgufFile f = parse_gguf(bytes.data(), bytes.size(), "k.gguf");
  EXPECT_EQ(f.find_tensor("blk.0.attn_q.weight")->type->id, kGgmlTypeQ4_K);
  EXPECT_EQ(f.find_tensor("blk.0.ffn_down.weight")->type->id, kGgmlTypeQ4_K);
  EXPECT_EQ(f.find_tensor("token_embd.weight")->type->id, kGgmlTypeF32);
  const Model got = model_from_gguf(f);
  const Model want = gguf_layout(m);
  each_tensor(got, want, [&](const std::string& name, const std::vector<float>& g,
                             const std::vector<float>& w) {
    if (name.find(" w") == std::string::npos) {
      EXPECT_EQ(g, w) << name;  // F32
      return;
    }
    std::vector<float> decoded(w.size());
    decode_q4_k(encode_q4_k(w).data(), w.size(), decoded.data());
    EXPECT_EQ(g, decoded) << name;
  });
  // It generates: greedy steps on the oracle give finite logits and the tokens of the
  // fp32 model at most steps (4-bit noise may flip a near tie).
  oracle::KVStore kv(got.config, 9), kv32(want.config, 9);
  std::vector<float> lq = oracle::forward_prompt(got, kv, {1}, 0);
  std::vector<float> l32 = oracle::forward_prompt(want, kv32, {1}, 0);
  int same = 0;
  for (int s = 0; s < 8; ++s) {
    for (float x : lq) ASSERT_TRUE(std::isfinite(x)) << "step " << s;
    const int tq = int(std::max_element(lq.begin(), lq.end()) - lq.begin());
    same += tq == int(std::max_element(l32.begin(), l32.end()) - l32.begin());
    lq = oracle::forward_token(got, kv, tq, 1 + s);
    l32 = oracle::forward_token(want, kv32, tq, 1 + s);
  }
  EXPECT_GE(same, 6);
}

void expect_refused(const std::function<void()>& fn, const std::string& what) {
  try {
    fn();
    ADD_FAILURE() << "accepted; expected: " << what;
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST(QuantGguf, RefusesWhatGgufCannotStore) {
  const Model m = rotate_half_model(false);
  const GgufVocabulary v = vocab_of(48);
  using quant::QuantMethod;
  expect_refused([&] { quant::export_quantized_gguf(quantize(m, QuantMethod::kRtn, 4, 128), v); },
                 "scheme int4-g128-sym has no GGUF form: GGUF stores int4-g32-sym (as Q4_0)");
  expect_refused([&] { quant::export_quantized_gguf(quantize(m, QuantMethod::kRtn, 8, 32, false), v); },
                 "scheme int8-g32-asym has no GGUF form");
  expect_refused([&] { quant::export_quantized_gguf(quantize(m, QuantMethod::kRtn, 4, 0), v); },
                 "scheme int4-ch-sym has no GGUF form");
  expect_refused(
      [&] { quant::export_quantized_gguf(quantize(m, QuantMethod::kGptq, 4, 32, true, true), v); },
      "blk.0.attn_q.weight: GPTQ act-order groups are scattered");
  Model odd = m;  // hidden 48: ffn_down's rows are one and a half blocks
  odd.config.hidden_dim = 48;
  odd = make_synthetic_model(odd.config, 4);
  expect_refused([&] { quant::export_quantized_gguf(quantize(odd, QuantMethod::kRtn, 4, 32), v); },
                 "blk.0.ffn_down.weight: rows of 48 columns are not whole 32-column Q4_0 blocks");
  expect_refused([&] { quant::export_q4_k_gguf(m, v); },
                 "blk.0.attn_q.weight: rows of 64 columns are not whole 256-column Q4_K blocks");
}

}  // namespace
}  // namespace nanoserve
