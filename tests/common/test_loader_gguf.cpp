// GGUF: the real stories260K.gguf (config, vocabulary, weights identical to the .bin), every
// metadata value type from hand-written bytes, and F16/BF16 tensors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "common/error.h"
#include "common/loaders/ggml_types.h"
#include "common/loaders/gguf_file.h"
#include "common/loaders/gguf_loader.h"
#include "common/loaders/gguf_vocabulary.h"
#include "common/loaders/gguf_writer.h"
#include "common/loaders/llama2c_loader.h"
#include "common/loaders/mapped_file.h"
#include "common/loaders/synthetic_model.h"
#include "common/rope_frequencies.h"
#include "loader_test_files.h"
#include "test_support.h"

namespace nanoserve {
namespace {

using testing::expect_load_error;
using testing::micro_model;

/// Builds GGUF bytes by hand, independently of GgufWriter.
struct Bytes {
  std::vector<uint8_t> b;
  template <typename T>
  Bytes& put(T v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    b.insert(b.end(), p, p + sizeof v);
    return *this;
  }
  Bytes& str(const std::string& s) {
    put<uint64_t>(s.size());
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
  Bytes& key(const std::string& k, uint32_t type) { return str(k).put<uint32_t>(type); }
};

TEST(GgufFile, ParsesEveryMetadataValueTypeFromHandWrittenBytes) {
  Bytes g;
  g.put('G').put('G').put('U').put('F').put<uint32_t>(3).put<uint64_t>(0).put<uint64_t>(15);
  g.key("u8", 0).put<uint8_t>(200);
  g.key("i8", 1).put<int8_t>(-100);
  g.key("u16", 2).put<uint16_t>(60000);
  g.key("i16", 3).put<int16_t>(-30000);
  g.key("u32", 4).put<uint32_t>(4000000000u);
  g.key("i32", 5).put<int32_t>(-2000000000);
  g.key("f32", 6).put<float>(0.25f);
  g.key("bool", 7).put<uint8_t>(1);
  g.key("str", 8).str("héllo");
  g.key("u64", 10).put<uint64_t>(uint64_t(1) << 63);
  g.key("i64", 11).put<int64_t>(-(int64_t(1) << 62));
  g.key("f64", 12).put<double>(-1.5e300);
  g.key("arr", 9).put<uint32_t>(2).put<uint64_t>(3).put<uint16_t>(1).put<uint16_t>(2).put<uint16_t>(
      3);
  g.key("nested", 9).put<uint32_t>(9).put<uint64_t>(2);  // array of arrays
  g.put<uint32_t>(8).put<uint64_t>(1).str("a");          //   ["a"]
  g.put<uint32_t>(8).put<uint64_t>(0);                   //   []
  g.key("empty", 9).put<uint32_t>(6).put<uint64_t>(0);
  const GgufFile f = parse_gguf(g.b.data(), g.b.size(), "hand.gguf");
  const GgufMetadata& m = f.metadata;
  EXPECT_EQ(f.version, 3u);
  EXPECT_EQ(m.entries().size(), 15u);
  EXPECT_EQ(std::get<uint8_t>(m.find("u8")->data), 200);
  EXPECT_EQ(std::get<int8_t>(m.find("i8")->data), -100);
  EXPECT_EQ(std::get<uint16_t>(m.find("u16")->data), 60000);
  EXPECT_EQ(std::get<int16_t>(m.find("i16")->data), -30000);
  EXPECT_EQ(m.get_int("u32"), 4000000000LL);
  EXPECT_EQ(m.get_int("i32"), -2000000000LL);
  EXPECT_EQ(m.get_float("f32"), 0.25);
  EXPECT_EQ(std::get<bool>(m.find("bool")->data), true);
  EXPECT_EQ(m.get_string("str"), "héllo");
  EXPECT_EQ(std::get<uint64_t>(m.find("u64")->data), uint64_t(1) << 63);
  EXPECT_EQ(m.find("u64")->as_int(), std::nullopt) << "2^63 does not fit in int64";
  EXPECT_EQ(m.get_int("i64"), -(int64_t(1) << 62));
  EXPECT_EQ(m.get_float("f64"), -1.5e300);
  const GgufArray* arr = m.get_array("arr");
  ASSERT_NE(arr, nullptr);
  EXPECT_EQ(arr->element_type, GgufType::kUint16);
  ASSERT_EQ(arr->items.size(), 3u);
  EXPECT_EQ(arr->items[2].as_int(), 3);
  const GgufArray* nested = m.get_array("nested");
  ASSERT_EQ(nested->items.size(), 2u);
  const auto& inner = std::get<GgufArray>(nested->items[0].data);
  EXPECT_EQ(std::get<std::string>(inner.items.at(0).data), "a");
  EXPECT_TRUE(std::get<GgufArray>(nested->items[1].data).items.empty());
  EXPECT_EQ(m.get_array("empty")->element_type, GgufType::kFloat32);
  EXPECT_EQ(m.get_int("absent"), std::nullopt);
  // With no tensors the data section starts at the aligned end of the header.
  EXPECT_EQ(f.data_offset, (g.b.size() + 31) / 32 * 32);
  // Typed getters name the key on a type mismatch.
  expect_load_error([&] { m.get_int("str"); }, "hand.gguf", "str", "is a string");
  expect_load_error([&] { m.get_string("u8"); }, "hand.gguf", "u8", "is a uint8");
  expect_load_error([&] { m.get_array("f32"); }, "hand.gguf", "f32", "expected an array");
}

TEST(GgufFile, ParsesStories260KLayout) {
  NANOSERVE_REQUIRE_DATA(path, "stories260K.gguf");
  const MappedFile file(path);
  const GgufFile f = parse_gguf(file.data(), file.size(), path);
  // From the data README and an independent reading of the header: v3, 48 tensors, 19 keys;
  // the header ends at byte 14152, so the 32-aligned data section starts at 14176 and its
  // 1,171,200 bytes of F32 tensors end the file.
  EXPECT_EQ(f.version, 3u);
  EXPECT_EQ(f.tensors.size(), 48u);
  EXPECT_EQ(f.metadata.entries().size(), 19u);
  EXPECT_EQ(f.alignment, 32u);
  EXPECT_EQ(f.data_offset, 14176u);
  const GgufTensorInfo* embd = f.find_tensor("token_embd.weight");
  ASSERT_NE(embd, nullptr);
  EXPECT_EQ(embd->dims, (std::vector<uint64_t>{64, 512}));
  EXPECT_EQ(embd->type->id, kGgmlTypeF32);
  EXPECT_EQ(f.find_tensor("blk.0.ffn_down.weight")->dims, (std::vector<uint64_t>{172, 64}));
  uint64_t total = 0;
  for (const GgufTensorInfo& t : f.tensors) total += t.n_bytes;
  EXPECT_EQ(f.data_offset + total, file.size());
}

TEST(GgufLoader, LoadsStories260KConfig) {
  NANOSERVE_REQUIRE_DATA(path, "stories260K.gguf");
  const Model m = load_gguf(path);
  const ModelConfig& c = m.config;
  EXPECT_EQ(c.dim, 64);
  EXPECT_EQ(c.hidden_dim, 172);
  EXPECT_EQ(c.n_layers, 5);
  EXPECT_EQ(c.n_heads, 8);
  EXPECT_EQ(c.n_kv_heads, 4);
  EXPECT_EQ(c.head_dim, 8);
  EXPECT_EQ(c.vocab_size, 512);
  // The file says 2048 (the converter's default); the model was trained with 512. The loader
  // reports what the file says (README: "its llama.context_length says 2048").
  EXPECT_EQ(c.max_seq_len, 2048);
  EXPECT_EQ(c.rope_theta, 10000.0f);  // no rope.freq_base key: llama.cpp's default
  EXPECT_EQ(c.rope_style, RopeStyle::kAdjacentPairs);
  EXPECT_EQ(c.norm_eps, 1e-5f);
  EXPECT_FALSE(c.tied_classifier) << "output.weight is stored, so the classifier is separate";
}

TEST(GgufLoader, Stories260KWeightsAreIdenticalToTheBin) {
  NANOSERVE_REQUIRE_DATA(bin_path, "stories260K.bin");
  NANOSERVE_REQUIRE_DATA(gguf_path, "stories260K.gguf");
  const Model bin = load_llama2c(bin_path);
  const Model gguf = load_gguf(gguf_path);
  testing::expect_same_weights(gguf, bin);  // every tensor, and classifier_weights()
  // The stored output.weight is a copy of the embedding.
  EXPECT_EQ(gguf.classifier, bin.token_embedding);
}

TEST(GgufLoader, Stories260KSpotWeightsMatchRawBytes) {
  NANOSERVE_REQUIRE_DATA(path, "stories260K.gguf");
  const Model m = load_gguf(path);
  const std::vector<uint8_t> raw = testing::read_bytes(path);
  // Data section at 14176; tensor offsets from the header: output_norm 131072, blk.0.attn_q
  // 262400, blk.4.ffn_norm 1170944 (the last tensor, 64 floats).
  auto at = [&](size_t offset) { return testing::peek<float>(raw, 14176 + offset); };
  EXPECT_EQ(m.token_embedding.front(), at(0));
  EXPECT_EQ(m.final_norm.front(), at(131072));
  EXPECT_EQ(m.layers[0].wq.front(), at(262400));
  EXPECT_EQ(m.layers[4].ffn_norm.back(), at(1170944 + 63 * 4));
  EXPECT_EQ(raw.size(), 14176u + 1170944 + 64 * 4);
}

TEST(GgufVocabulary, Stories260KVocabularyMatchesTok512) {
  NANOSERVE_REQUIRE_DATA(path, "stories260K.gguf");
  NANOSERVE_REQUIRE_DATA(tok_path, "tok512.bin");
  const GgufVocabulary v = load_gguf_vocabulary(path);
  EXPECT_EQ(v.model, "llama");
  ASSERT_EQ(v.tokens.size(), 512u);
  EXPECT_EQ(v.tokens[0], "<unk>");
  EXPECT_EQ(v.tokens[1], "<s>");
  EXPECT_EQ(v.tokens[2], "</s>");
  EXPECT_EQ(v.tokens[3], "<0x00>");
  EXPECT_EQ(v.bos_id, 1);
  EXPECT_EQ(v.eos_id, 2);
  EXPECT_EQ(v.unk_id, 0);
  EXPECT_EQ(v.pad_id, -1) << "0xFFFFFFFF means none";
  EXPECT_EQ(v.token_types[0], GgufTokenType::kUnknown);
  EXPECT_EQ(v.token_types[1], GgufTokenType::kControl);
  EXPECT_EQ(v.token_types[3], GgufTokenType::kByte);
  EXPECT_EQ(v.token_types[300], GgufTokenType::kNormal);
  // tok512.bin (llama2.c format: int32 max_len, then float score, int32 len, bytes per token)
  // holds the same pieces with ' ' where SentencePiece writes U+2581, and the same scores.
  const std::vector<uint8_t> tok = testing::read_bytes(tok_path);
  ASSERT_EQ(v.scores.size(), 512u);
  size_t p = 4;
  for (size_t i = 0; i < 512; ++i) {
    const float score = testing::peek<float>(tok, p);
    const int32_t len = testing::peek<int32_t>(tok, p + 4);
    std::string piece(reinterpret_cast<const char*>(&tok[p + 8]), size_t(len));
    p += 8 + size_t(len);
    EXPECT_EQ(v.scores[i], score) << i;
    if (i < 3) continue;  // tok512.bin wraps <s> and </s> in newlines
    std::string gguf_piece = v.tokens[i];
    for (size_t k; (k = gguf_piece.find("\xE2\x96\x81")) != std::string::npos;) {
      gguf_piece.replace(k, 3, " ");
    }
    EXPECT_EQ(gguf_piece, piece) << i;
  }
}

TEST(GgufLoader, RoundTripsF32F16AndBf16TensorsWithVocabulary) {
  GgufVocabulary vocab;
  vocab.model = "llama";
  for (int i = 0; i < 10; ++i) vocab.tokens.push_back("t" + std::to_string(i));
  vocab.scores.assign(10, -1.0f);
  vocab.token_types.assign(10, GgufTokenType::kNormal);
  vocab.bos_id = 1;
  vocab.eos_id = 2;
  for (const bool tied : {true, false}) {
    const Model want = micro_model(tied);
    for (const uint32_t type : {kGgmlTypeF32, kGgmlTypeF16, kGgmlTypeBF16}) {
      SCOPED_TRACE(std::string(find_ggml_type(type)->name) + (tied ? " tied" : " untied"));
      const std::vector<uint8_t> bytes = save_gguf(want, type, &vocab);
      const Model got = load_gguf_from_memory(bytes.data(), bytes.size(), "micro.gguf");
      EXPECT_EQ(got.config.tied_classifier, tied);
      EXPECT_EQ(got.config.q_dim(), want.config.q_dim());
      EXPECT_EQ(got.config.max_seq_len, 6);
      // micro_model's values are exact in fp16 and bf16, so every format round-trips exactly.
      testing::expect_same_weights(got, want);
      const GgufVocabulary v = load_gguf_vocabulary_from_memory(bytes.data(), bytes.size(), "v");
      EXPECT_EQ(v.tokens, vocab.tokens);
      EXPECT_EQ(v.bos_id, 1);
      EXPECT_EQ(v.unk_id, -1);
    }
  }
}

TEST(GgufLoader, F16RoundingOfInexactValuesIsWithinHalfAnUlp) {
  Model m = micro_model(true);
  m.layers[0].wq[0] = 0.1f;  // not representable in fp16: stored as the nearest value
  const std::vector<uint8_t> bytes = save_gguf(m, kGgmlTypeF16);
  const Model got = load_gguf_from_memory(bytes.data(), bytes.size(), "f16.gguf");
  // fp16 has 10 fraction bits: near 0.1 (in [2^-4, 2^-3)) one ulp is 2^-14.
  EXPECT_NEAR(got.layers[0].wq[0], 0.1f, 0.5 * std::ldexp(1.0, -14));
  EXPECT_EQ(got.layers[0].wq[0], 0.0999755859375f);  // 0x2E66, the nearest fp16
}

/// Offset of the uint32 ggml type of tensor `name` in a GGUF file (after the name come
/// uint32 n_dims and n_dims uint64 dims).
size_t type_field_offset(const std::vector<uint8_t>& bytes, const std::string& name) {
  const size_t at = testing::find_bytes(bytes, name);
  EXPECT_NE(at, std::string::npos) << name;
  const uint32_t n_dims = testing::peek<uint32_t>(bytes, at + name.size());
  return at + name.size() + 4 + 8 * n_dims;
}

TEST(GgufLoader, UndecodableQuantizedTensorIsRejectedNamingTensorAndType) {
  // A model whose rows hold whole 32-element blocks, stored F32 except one tensor relabelled
  // Q8_1 (32 rows x one 36-byte block: a smaller range, still inside the file), a type in the
  // table without a decoder (llama.cpp uses it only for activations).
  ModelConfig c = testing::micro_config(true);
  c.dim = 32;
  c.head_dim = 16;
  const Model m = make_synthetic_model(c, 7);
  std::vector<uint8_t> bytes = save_gguf(m, kGgmlTypeF32);
  testing::patch<uint32_t>(bytes, type_field_offset(bytes, "blk.0.attn_q.weight"), 9);
  const GgufFile f = parse_gguf(bytes.data(), bytes.size(), "q81.gguf");
  const GgufTensorInfo* q = f.find_tensor("blk.0.attn_q.weight");
  EXPECT_EQ(std::string(q->type->name), "Q8_1");
  EXPECT_EQ(q->n_bytes, 32u * 36);
  expect_load_error([&] { model_from_gguf(f); }, "q81.gguf", "blk.0.attn_q.weight",
                    "ggml type Q8_1 is not supported yet (supported: F32, F16, Q4_0, Q4_1, "
                    "Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, BF16)");
}

TEST(GgufLoader, Qwen2RoundTripsWithItsBiasesAndRotateHalfRope) {
  ModelConfig c = testing::micro_config(true);
  c.architecture = "qwen2";
  c.rope_style = RopeStyle::kRotateHalf;
  c.rope_theta = 1e6f;
  Model want = make_synthetic_model(c, 9);
  want.config.attention_bias = true;
  int k = 50;
  for (LayerWeights& w : want.layers) {
    w.bq = testing::micro_tensor(k++, size_t(c.q_dim()));
    w.bk = testing::micro_tensor(k++, size_t(c.kv_dim()));
    w.bv = testing::micro_tensor(k++, size_t(c.kv_dim()));
  }
  const std::vector<uint8_t> bytes = save_gguf(want, kGgmlTypeF32);
  const Model got = load_gguf_from_memory(bytes.data(), bytes.size(), "qwen2.gguf");
  EXPECT_EQ(got.config.architecture, "qwen2");
  EXPECT_TRUE(got.config.attention_bias);
  EXPECT_EQ(got.config.rope_style, RopeStyle::kRotateHalf);
  EXPECT_EQ(got.config.rope_theta, 1e6f);
  testing::expect_same_weights(got, want);
  // Without its biases a qwen2 file is refused, naming the tensor.
  std::vector<uint8_t> broken = bytes;
  broken[testing::find_gguf_string(broken, "blk.1.attn_v.bias") + 14] = 'X';  // "attn_X.bias"
  expect_load_error([&] { load_gguf_from_memory(broken.data(), broken.size(), "q.gguf"); },
                    "q.gguf", "blk.1.attn_v.bias", "missing");
}

/// A llama model of head_dim 16 with Llama 3.1's rope_scaling (original context shrunk to 64 so
/// that the 8 pairs of a small head fall in all three bands).
Model llama31_micro_model() {
  ModelConfig c = testing::micro_config(true);
  c.head_dim = 16;  // 8 pairs
  c.rope_theta = 500000.0f;
  c.rope_scaling = {RopeScalingType::kLlama3, 8.0f, 1.0f, 4.0f, 64};
  return make_synthetic_model(c, 3);
}

TEST(GgufLoader, Llama31FrequencyFactorsAreReadAsLlamaCppWritesThem) {
  const Model m = llama31_micro_model();
  const ModelConfig& c = m.config;
  // save_gguf writes llama.cpp's rope_freqs.weight (no rope.scaling keys) ...
  const std::vector<uint8_t> bytes = save_gguf(m, kGgmlTypeF32);
  const GgufFile f = parse_gguf(bytes.data(), bytes.size(), "l31.gguf");
  const GgufTensorInfo* t = f.find_tensor("rope_freqs.weight");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->dims, std::vector<uint64_t>{uint64_t(c.head_dim / 2)});
  EXPECT_EQ(f.metadata.find("llama.rope.scaling.type"), nullptr);
  // ... holding 1 for the kept pairs, the factor for the divided ones, a blend between.
  const std::vector<float> ff = llama3_rope_freq_factors(c.head_dim, c.rope_theta, c.rope_scaling);
  ASSERT_EQ(ff.size(), 8u);
  EXPECT_EQ(ff.front(), 1.0f);
  EXPECT_EQ(ff.back(), 8.0f);
  EXPECT_TRUE(std::any_of(ff.begin(), ff.end(), [](float x) { return x > 1.0f && x < 8.0f; }));
  // Loaded back: the divisors, and a frequency table equal to transformers' llama3 rule up to
  // the rounding of the two formulas (llama.cpp divides by 1 / blend, transformers blends).
  const Model got = load_gguf_from_memory(bytes.data(), bytes.size(), "l31.gguf");
  EXPECT_EQ(got.config.rope_scaling.type, RopeScalingType::kNone);
  EXPECT_EQ(got.config.rope_scaling.freq_factors, ff);
  const std::vector<float> want = rope_frequencies(c), have = rope_frequencies(got.config);
  ASSERT_EQ(have.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(have[i], want[i], 4 * FLT_EPSILON * want[i]) << "pair " << i;
  }
  EXPECT_NE(rope_frequencies(got.config), rope_base_frequencies(c.head_dim, c.rope_theta));
  testing::expect_same_weights(got, m);
}

TEST(GgufLoader, BadFrequencyFactorsAreRefusedNamingTheTensor) {
  Model m = make_synthetic_model(testing::micro_config(true), 3);
  const std::vector<uint8_t> bytes = save_gguf(m, kGgmlTypeF32);
  const GgufFile f = parse_gguf(bytes.data(), bytes.size(), "m.gguf");
  // The same file plus a rope_freqs.weight of `factors`.
  auto with = [&](const std::vector<float>& factors) {
    GgufWriter w;
    for (const auto& [key, value] : f.metadata.entries()) w.add_metadata(key, value);
    for (const GgufTensorInfo& t : f.tensors) {
      const uint8_t* p = f.tensor_data(t);
      w.add_tensor(t.name, t.dims, t.type->id, {p, p + t.n_bytes});
    }
    w.add_tensor("rope_freqs.weight", {factors.size()}, kGgmlTypeF32,
                 encode_floats(factors, kGgmlTypeF32));
    return w.serialize();
  };
  const int pairs = m.config.head_dim / 2;
  const std::vector<uint8_t> short_one = with({1.0f, 8.0f, 8.0f});
  expect_load_error([&] { load_gguf_from_memory(short_one.data(), short_one.size(), "l.gguf"); },
                    "l.gguf", "rope_freqs.weight", "has shape [3], expected [" +
                    std::to_string(pairs) + "]");
  std::vector<float> zero(size_t(pairs), 1.0f);
  zero[1] = 0.0f;
  const std::vector<uint8_t> zero_one = with(zero);
  expect_load_error([&] { load_gguf_from_memory(zero_one.data(), zero_one.size(), "z.gguf"); },
                    "z.gguf", "rope_freqs.weight", "factor 1 is 0.000000, not a positive finite");
  // A file's factors cannot be written as config.json, nor as llama2.c; they survive GGUF.
  const std::vector<uint8_t> twos = with(std::vector<float>(size_t(pairs), 2.0f));
  const Model l31 = load_gguf_from_memory(twos.data(), twos.size(), "x");
  EXPECT_THROW(save_llama2c(l31), InvalidArgument);
  const std::vector<uint8_t> again = save_gguf(l31, kGgmlTypeF32);
  EXPECT_EQ(load_gguf_from_memory(again.data(), again.size(), "y").config.rope_scaling.freq_factors,
            std::vector<float>(size_t(pairs), 2.0f));
}

TEST(GgufFile, RejectsRowLengthThatIsNotAWholeNumberOfBlocks) {
  std::vector<uint8_t> bytes = save_gguf(micro_model(true), kGgmlTypeF32);
  testing::patch<uint32_t>(bytes, type_field_offset(bytes, "blk.1.ffn_up.weight"), 8);  // Q8_0
  expect_load_error([&] { parse_gguf(bytes.data(), bytes.size(), "q.gguf"); }, "q.gguf",
                    "blk.1.ffn_up.weight",
                    "row length 8 is not a multiple of the Q8_0 block size 32");
}

}  // namespace
}  // namespace nanoserve
