// nanoserve convert's library half (common/loaders/gguf_export.h): a checkpoint written as GGUF
// loads back to the same weights (bitwise in fp32, after rounding in fp16/bf16, within Q8_0's
// step) and generates the same greedy tokens; vocabularies keep their ids; what GGUF cannot
// hold is refused. llama.cpp itself loading the files is checked by the peer label
// (tests/peer/test_peer_llama_cpp.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/loaders/ggml_types.h"
#include "common/loaders/gguf_export.h"
#include "common/loaders/gguf_file.h"
#include "common/loaders/gguf_loader.h"
#include "common/loaders/gguf_vocabulary.h"
#include "common/loaders/gguf_writer.h"
#include "common/loaders/synthetic_model.h"
#include "common/loaders/tensor_decode.h"
#include "common/model_bundle.h"
#include "common/oracle/forward.h"
#include "common/oracle/kv_store.h"
#include "common/tokenizer/byte_tokenizer.h"
#include "common/tokenizer/hf_bpe_tokenizer.h"
#include "loader_test_files.h"
#include "test_support.h"
#include "tokenizer_test_support.h"

namespace nanoserve {
namespace {

/// Greedy tokens of the oracle from BOS.
std::vector<int> greedy(const Model& m, int bos, int steps) {
  oracle::KVStore kv(m.config, steps + 1);
  std::vector<float> logits = oracle::forward_prompt(m, kv, {bos}, 0);
  std::vector<int> out;
  for (int s = 0; s < steps; ++s) {
    const auto last = logits.end() - m.config.vocab_size;
    out.push_back(int(std::max_element(last, logits.end()) - last));
    logits = oracle::forward_token(m, kv, out.back(), 1 + s);
  }
  return out;
}

/// Calls fn(name, got, want) for every tensor of two models of the same shape.
void each_tensor(const Model& got, const Model& want,
                 const std::function<void(const std::string&, const std::vector<float>&,
                                          const std::vector<float>&)>& fn) {
  fn("token_embedding", got.token_embedding, want.token_embedding);
  for (size_t l = 0; l < want.layers.size(); ++l) {
    const LayerWeights &a = got.layers[l], &b = want.layers[l];
    const std::string p = "layer " + std::to_string(l) + " ";
    fn(p + "attn_norm", a.attn_norm, b.attn_norm);
    fn(p + "wq", a.wq, b.wq);
    fn(p + "wk", a.wk, b.wk);
    fn(p + "wv", a.wv, b.wv);
    fn(p + "wo", a.wo, b.wo);
    fn(p + "ffn_norm", a.ffn_norm, b.ffn_norm);
    fn(p + "w1", a.w1, b.w1);
    fn(p + "w2", a.w2, b.w2);
    fn(p + "w3", a.w3, b.w3);
  }
  fn("final_norm", got.final_norm, want.final_norm);
  fn("classifier", got.classifier_weights(), want.classifier_weights());
}

TEST(GgufExport, Stories260KRoundTripsBitwiseInFp32WithTheSameGreedyTokens) {
  NANOSERVE_REQUIRE_DATA(bin, "stories260K.bin");
  const ModelBundle b = load_model_bundle(bin);
  const GgufVocabulary v = gguf_vocabulary_of(*b.tokenizer, 512, "", bin);
  const std::vector<uint8_t> bytes = export_gguf(b.model, v, kGgmlTypeF32);
  const Model got = load_gguf_from_memory(bytes.data(), bytes.size(), "s.gguf");
  testing::expect_same_weights(got, b.model);
  EXPECT_EQ(greedy(got, 1, 24), greedy(b.model, 1, 24));
  // The vocabulary is the one llama.cpp's converter wrote into the published stories260K.gguf.
  NANOSERVE_REQUIRE_DATA(published, "stories260K.gguf");
  const GgufVocabulary want = load_gguf_vocabulary(published);
  const GgufVocabulary have = load_gguf_vocabulary_from_memory(bytes.data(), bytes.size(), "s");
  EXPECT_EQ(have.model, "llama");
  EXPECT_EQ(have.tokens, want.tokens);
  EXPECT_EQ(have.scores, want.scores);
  EXPECT_EQ(have.token_types, want.token_types);
  EXPECT_EQ(have.bos_id, want.bos_id);
  EXPECT_EQ(have.eos_id, want.eos_id);
  // And its tokenizer, read back from the file, encodes as tok512.bin does.
  const std::string path = testing::write_temp_file("s260k.gguf", bytes);
  const ModelBundle again = load_model_bundle(path);
  const std::string text = "Once upon a time, Lily saw a big red ball.";
  EXPECT_EQ(again.tokenizer->encode(text, true, false), b.tokenizer->encode(text, true, false));
}

TEST(GgufExport, Fp16Bf16AreTheRoundedWeightsAndQ8_0IsWithinHalfAStep) {
  NANOSERVE_REQUIRE_DATA(bin, "stories260K.bin");
  const ModelBundle b = load_model_bundle(bin);
  const GgufVocabulary v = gguf_vocabulary_of(*b.tokenizer, 512, "", bin);
  for (uint32_t type : {kGgmlTypeF16, kGgmlTypeBF16}) {
    const std::vector<uint8_t> bytes = export_gguf(b.model, v, type);
    const Model got = load_gguf_from_memory(bytes.data(), bytes.size(), "r.gguf");
    const GgmlTypeInfo* t = find_ggml_type(type);
    ASSERT_NE(t, nullptr);
    each_tensor(got, b.model, [&](const std::string& name, const std::vector<float>& g,
                                  const std::vector<float>& w) {
      const bool norm = name.find("norm") != std::string::npos;  // 1-D: F32, exact
      const std::vector<float> rounded =
          norm ? w : decode_tensor(t->decode, encode_floats(w, type).data(), w.size(), "x", name);
      EXPECT_EQ(g, rounded) << t->name << " " << name;
    });
  }
  const std::vector<uint8_t> q8 = export_gguf(b.model, v, kGgmlTypeQ8_0);
  const GgufFile f = parse_gguf(q8.data(), q8.size(), "q8.gguf");
  // Rows of 64 are whole Q8_0 blocks; ffn_down's rows of 172 are not and fall back to F16.
  EXPECT_EQ(f.find_tensor("blk.0.attn_q.weight")->type->id, kGgmlTypeQ8_0);
  EXPECT_EQ(f.find_tensor("blk.0.ffn_down.weight")->type->id, kGgmlTypeF16);
  EXPECT_EQ(f.find_tensor("blk.0.attn_norm.weight")->type->id, kGgmlTypeF32);
  const Model got = model_from_gguf(f);
  each_tensor(got, b.model, [&](const std::string& name, const std::vector<float>& g,
                                const std::vector<float>& w) {
    ASSERT_EQ(g.size(), w.size());
    for (size_t blk = 0; blk + 32 <= w.size(); blk += 32) {
      float amax = 0.0f;
      for (size_t j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(w[blk + j]));
      // Half a step of amax / 127, plus the fp16 rounding of the scale (2^-11 relative).
      const float bound = amax / 127.0f * (0.5f + 127.0f / 2048.0f) + 1e-12f;
      for (size_t j = 0; j < 32; ++j) {
        ASSERT_LE(std::fabs(g[blk + j] - w[blk + j]), bound) << name << " at " << blk + j;
      }
    }
  });
}

TEST(GgufExport, HuggingFaceLlamaIsPermutedToAdjacentPairsAndGeneratesTheSame) {
  NANOSERVE_REQUIRE_DATA(dir, "tinystories-656k");
  const ModelBundle b = load_model_bundle(dir);
  ASSERT_EQ(b.model.config.rope_style, RopeStyle::kRotateHalf);
  const GgufVocabulary v = gguf_vocabulary_of(*b.tokenizer, b.model.config.vocab_size, "", dir);
  EXPECT_EQ(v.model, "llama");
  const std::vector<uint8_t> bytes = export_gguf(b.model, v, kGgmlTypeF32);
  const Model got = load_gguf_from_memory(bytes.data(), bytes.size(), "t.gguf");
  EXPECT_EQ(got.config.rope_style, RopeStyle::kAdjacentPairs);
  testing::expect_same_weights(got, gguf_layout(b.model));
  // Permuting wq/wk while switching the pairing is the same model: same greedy story.
  EXPECT_EQ(greedy(got, b.tokenizer->bos_id(), 24), greedy(b.model, b.tokenizer->bos_id(), 24));
  // The permutation itself: row j of head 0 goes to 2j, row j + head_dim/2 to 2j + 1.
  const size_t cols = size_t(b.model.config.dim), hd = size_t(b.model.config.head_dim);
  for (size_t j = 0; j < hd / 2; ++j) {
    EXPECT_EQ(got.layers[0].wq[2 * j * cols], b.model.layers[0].wq[j * cols]) << j;
    EXPECT_EQ(got.layers[0].wq[(2 * j + 1) * cols], b.model.layers[0].wq[(j + hd / 2) * cols]);
  }
  // The SentencePiece-style tokenizer.json becomes a "llama" vocabulary that encodes the sample
  // as the HF tokenizer does (scores = negated merge ranks; see gguf_export.h).
  const ModelBundle again = load_model_bundle(testing::write_temp_file("t656k.gguf", bytes));
  NANOSERVE_REQUIRE_DATA(sample, "tinystories_valid_sample.txt");
  const std::vector<std::string> docs =
      testing::split_documents(testing::read_text(sample), "\n<|endoftext|>\n");
  for (size_t i = 0; i < 20 && i < docs.size(); ++i) {
    EXPECT_EQ(again.tokenizer->encode(docs[i], true, false), b.tokenizer->encode(docs[i], true, false))
        << "document " << i;
  }
}

// Byte-level tokenizer.json files become "gpt2" vocabularies named after their pre-tokenizer,
// and the GGUF file's tokenizer gives the Hugging Face library's ids on every recorded case.
TEST(GgufExport, ByteLevelVocabulariesKeepTheirIdsThroughGguf) {
  const std::pair<const char*, const char*> families[] = {
      {"llama3", "llama-bpe"}, {"qwen2", "qwen2"}, {"smollm2", "smollm"}, {"gpt2", "gpt2"}};
  for (const auto& [family, pre] : families) {
    SCOPED_TRACE(family);
    const std::string dir = testing::fixture_path(std::string("tokenizers/") + family);
    const auto tok = load_hf_tokenizer(dir + "/tokenizer.json");
    ModelConfig c = testing::micro_config(true);
    c.vocab_size = tok->vocab_size() + 5;  // a few padding rows, as Qwen2.5's embedding has
    if (std::string(family) == "qwen2") {
      c.architecture = "qwen2";
      c.rope_style = RopeStyle::kRotateHalf;
    }
    Model m = make_synthetic_model(c, 5);
    if (c.architecture == "qwen2") {
      m.config.attention_bias = true;
      for (LayerWeights& w : m.layers) {
        w.bq.assign(size_t(c.q_dim()), 0.5f);
        w.bk.assign(size_t(c.kv_dim()), -0.25f);
        w.bv.assign(size_t(c.kv_dim()), 0.125f);
      }
    }
    const GgufVocabulary v = gguf_vocabulary_of(*tok, c.vocab_size, "{{ x }}", dir);
    EXPECT_EQ(v.model, "gpt2");
    EXPECT_EQ(v.pre, pre);
    EXPECT_EQ(v.tokens.back(), "[PAD" + std::to_string(c.vocab_size - 1) + "]");
    const std::vector<uint8_t> bytes = export_gguf(m, v, kGgmlTypeF32);
    const Model got = load_gguf_from_memory(bytes.data(), bytes.size(), "b.gguf");
    testing::expect_same_weights(got, m);
    const ModelBundle back = load_model_bundle(testing::write_temp_file(std::string(family) + ".gguf", bytes));
    EXPECT_EQ(back.chat_template, "{{ x }}");
    const nlohmann::json cases = testing::read_fixture(std::string("tokenizers/") + family + "/cases.json")["cases"];
    for (const auto& k : cases) {
      if (k.contains("hex")) continue;
      const std::string text = k["text"];
      EXPECT_EQ(back.tokenizer->encode(text, false, false), k["ids"].get<std::vector<int>>()) << text;
    }
  }
}

// --dtype q4_0 / q4_k: every 2-D tensor through ggml's reference quantizer; rows that are not
// whole blocks fall back as llama.cpp's quantizer does (Q4_K -> Q5_0 -> F16, Q4_0 -> F16).
TEST(GgufExport, Q4_0AndQ4_KFallBackPerTensorAsLlamaCppDoes) {
  ModelConfig c;  // rows of 256 (wq..w3 read dim), 96 (w2 reads hidden), vocab rows of 256
  c.name = "k-shapes";
  c.dim = 256;
  c.hidden_dim = 96;
  c.n_layers = 1;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 64;
  c.vocab_size = 16;
  c.max_seq_len = 8;
  c.tied_classifier = false;
  const Model m = make_synthetic_model(c, 5);
  GgufVocabulary v;
  v.model = "llama";
  for (int i = 0; i < c.vocab_size; ++i) v.tokens.push_back("t" + std::to_string(i));
  const std::pair<uint32_t, uint32_t> want_w2[] = {{kGgmlTypeQ4_K, kGgmlTypeQ5_0},
                                                   {kGgmlTypeQ4_0, kGgmlTypeQ4_0}};
  for (const auto& [type, w2_type] : want_w2) {
    const std::vector<uint8_t> bytes = export_gguf(m, v, type);
    const GgufFile f = parse_gguf(bytes.data(), bytes.size(), "q.gguf");
    EXPECT_EQ(f.find_tensor("blk.0.attn_q.weight")->type->id, type);
    EXPECT_EQ(f.find_tensor("token_embd.weight")->type->id, type);
    EXPECT_EQ(f.find_tensor("blk.0.ffn_down.weight")->type->id, w2_type);
    EXPECT_EQ(f.find_tensor("blk.0.ffn_norm.weight")->type->id, kGgmlTypeF32);
    // Each tensor decodes to what its encoder wrote, and stays near the fp32 weights.
    const Model got = model_from_gguf(f);
    EXPECT_EQ(got.layers[0].w2, decode_tensor(find_ggml_type(w2_type)->decode,
                                              encode_floats(m.layers[0].w2, w2_type).data(),
                                              m.layers[0].w2.size(), "x", "w2"));
    each_tensor(got, m, [&](const std::string& name, const std::vector<float>& g,
                            const std::vector<float>& w) {
      for (size_t i = 0; i < w.size(); ++i) {
        // Uniform weights of std <= 1 (|w| < 1.8): a 4-bit step is about 3.5/15.
        ASSERT_NEAR(g[i], w[i], 0.3f) << name << " " << i;
      }
    });
  }
  EXPECT_EQ(gguf_row_type(kGgmlTypeQ4_K, 172), kGgmlTypeF16);  // stories260K's ffn_down
  EXPECT_EQ(gguf_row_type(kGgmlTypeQ4_K, 64), kGgmlTypeQ5_0);
  EXPECT_EQ(gguf_row_type(kGgmlTypeQ4_0, 172), kGgmlTypeF16);
  EXPECT_EQ(gguf_row_type(kGgmlTypeQ4_K, 512), kGgmlTypeQ4_K);
}

TEST(GgufExport, RefusesWhatGgufCannotHold) {
  EXPECT_THROW(parse_gguf_dtype("q6_k"), InvalidArgument);
  EXPECT_EQ(parse_gguf_dtype("q4_k"), kGgmlTypeQ4_K);
  EXPECT_EQ(parse_gguf_dtype("q4_0"), kGgmlTypeQ4_0);
  EXPECT_EQ(parse_gguf_dtype("bf16"), kGgmlTypeBF16);
  const ByteTokenizer bytes_only(259);
  try {
    gguf_vocabulary_of(bytes_only, 259, "", "synthetic:tiny");
    ADD_FAILURE() << "a byte tokenizer was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("has no GGUF form"), std::string::npos) << e.what();
  }
  const auto tok = load_hf_tokenizer(testing::fixture_path("tokenizers/gpt2/tokenizer.json"));
  EXPECT_THROW(gguf_vocabulary_of(*tok, 10, "", "small"), InvalidArgument);  // more tokens than rows
  Model m = make_synthetic_model(testing::micro_config(true), 1);
  m.config.attention_bias = true;  // llama with biases
  for (LayerWeights& w : m.layers) {
    w.bq.assign(size_t(m.config.q_dim()), 0.0f);
    w.bk.assign(size_t(m.config.kv_dim()), 0.0f);
    w.bv.assign(size_t(m.config.kv_dim()), 0.0f);
  }
  GgufVocabulary v;
  v.model = "llama";
  EXPECT_THROW(export_gguf(m, v, kGgmlTypeF32), InvalidArgument);
}

}  // namespace
}  // namespace nanoserve
