// Hugging Face checkpoints: the real TinyStories-656K (tied embeddings through the
// safetensors metadata), round trips in F32/F16/BF16, and the safetensors container.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "common/loaders/hf_loader.h"
#include "common/loaders/mapped_file.h"
#include "common/loaders/safetensors_file.h"
#include "common/loaders/tensor_decode.h"
#include "loader_test_files.h"
#include "test_support.h"

namespace nanoserve {
namespace {

using testing::expect_load_error;
using testing::peek;

/// The micro model in the Hugging Face convention (rotate-half RoPE).
Model hf_micro(bool tied) {
  Model m = testing::micro_model(tied);
  m.config.rope_style = RopeStyle::kRotateHalf;
  return m;
}

/// Writes an HF checkpoint directory under the test's temp dir and returns its path.
std::string write_hf_dir(const std::string& name, const std::string& config,
                         const std::vector<uint8_t>& safetensors) {
  const std::string dir = ::nanoserve::testing::temp_dir() + name;
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/config.json") << config;
  std::ofstream st(dir + "/model.safetensors", std::ios::binary);
  st.write(reinterpret_cast<const char*>(safetensors.data()), std::streamsize(safetensors.size()));
  return dir;
}

TEST(HfLoader, LoadsTinyStories656KWithThePublishedConfig) {
  NANOSERVE_REQUIRE_DATA(dir, "tinystories-656k");
  const Model m = load_hf_model(dir);
  const ModelConfig& c = m.config;
  // Data README: hidden 128, intermediate 384, 2 layers, 8 heads, 4 KV heads (head_dim 16),
  // vocab 2048, rope_theta 1e4, rms eps 1e-6, max positions 512, tied, rotate-half RoPE.
  EXPECT_EQ(c.dim, 128);
  EXPECT_EQ(c.hidden_dim, 384);
  EXPECT_EQ(c.n_layers, 2);
  EXPECT_EQ(c.n_heads, 8);
  EXPECT_EQ(c.n_kv_heads, 4);
  EXPECT_EQ(c.head_dim, 16);
  EXPECT_EQ(c.vocab_size, 2048);
  EXPECT_EQ(c.max_seq_len, 512);
  EXPECT_EQ(c.rope_theta, 10000.0f);
  EXPECT_EQ(c.norm_eps, 1e-6f);
  EXPECT_EQ(c.rope_style, RopeStyle::kRotateHalf);
  EXPECT_TRUE(c.tied_classifier);
  EXPECT_TRUE(m.classifier.empty());
  EXPECT_EQ(&m.classifier_weights(), &m.token_embedding);
}

TEST(HfLoader, TinyStoriesEmbeddingIsTheStoredLmHead) {
  NANOSERVE_REQUIRE_DATA(dir, "tinystories-656k");
  const Model m = load_hf_model(dir);
  const std::vector<uint8_t> raw = testing::read_bytes(dir + "/model.safetensors");
  // Header length 2160, so the data section starts at 2168. Offsets from the header:
  // lm_head.weight [0, 1048576), layers.0 q_proj [1737728, …), model.norm [2623488, 2624000).
  ASSERT_EQ(peek<uint64_t>(raw, 0), 2160u);
  auto at = [&](size_t offset) { return peek<float>(raw, 2168 + offset); };
  EXPECT_EQ(m.token_embedding.front(), at(0));
  EXPECT_EQ(m.token_embedding.back(), at(1048576 - 4));
  EXPECT_EQ(m.layers[0].wq.front(), at(1737728));
  EXPECT_EQ(m.final_norm.back(), at(2624000 - 4));
  EXPECT_EQ(raw.size(), 2168u + 2624000);
}

TEST(HfLoader, TinyStoriesSafetensorsMetadataAliasesTheEmbedding) {
  NANOSERVE_REQUIRE_DATA(dir, "tinystories-656k");
  const MappedFile f(dir + "/model.safetensors");
  const SafetensorsFile st = parse_safetensors(f.data(), f.size(), f.path());
  EXPECT_EQ(st.find("model.embed_tokens.weight"), nullptr);
  ASSERT_NE(st.find("lm_head.weight"), nullptr);
  EXPECT_EQ(st.metadata.at("model.embed_tokens.weight"), "lm_head.weight");
  EXPECT_EQ(st.tensors.size(), 20u);  // lm_head + 2 x 9 layer tensors + model.norm
}

TEST(HfLoader, RoundTripsTiedAndUntiedInEveryFloatDtype) {
  for (const bool tied : {true, false}) {
    for (const char* dtype : {"F32", "F16", "BF16"}) {
      SCOPED_TRACE(std::string(dtype) + (tied ? " tied" : " untied"));
      const Model want = hf_micro(tied);
      const HfCheckpoint ckpt = save_hf(want, dtype);
      const Model got = load_hf_from_memory(ckpt.config_json, ckpt.safetensors.data(),
                                            ckpt.safetensors.size(), "micro");
      EXPECT_EQ(got.config.tied_classifier, tied);
      EXPECT_EQ(got.config.rope_style, RopeStyle::kRotateHalf);
      testing::expect_same_weights(got, want);  // micro values are exact in fp16/bf16
    }
  }
}

TEST(HfLoader, LoadsADirectoryFromDisk) {
  const Model want = hf_micro(false);
  const HfCheckpoint ckpt = save_hf(want, "F32");
  const std::string dir = write_hf_dir("hf_micro", ckpt.config_json, ckpt.safetensors);
  const Model got = load_hf_model(dir);
  EXPECT_EQ(got.source, dir);
  testing::expect_same_weights(got, want);
}

TEST(HfLoader, TiedModelStoredOnlyAsLmHeadWithAliasLoads) {
  // TinyStories-656K's layout: only lm_head.weight stored, __metadata__ maps the embedding.
  const Model want = hf_micro(true);
  const HfCheckpoint ckpt = save_hf(want, "F32");
  const SafetensorsFile st =
      parse_safetensors(ckpt.safetensors.data(), ckpt.safetensors.size(), "s");
  std::vector<SafetensorsEntry> entries;
  for (const SafetensorsTensor& t : st.tensors) {
    const uint8_t* p = st.tensor_data(t);
    const std::string name = t.name == "model.embed_tokens.weight" ? "lm_head.weight" : t.name;
    entries.push_back(
        {name, t.dtype->name, t.shape, std::vector<uint8_t>(p, p + (t.end - t.begin))});
  }
  for (const bool alias : {true, false}) {
    SCOPED_TRACE(alias ? "with alias" : "without alias: tied falls back to lm_head");
    std::map<std::string, std::string> meta{{"format", "pt"}};
    if (alias) meta["model.embed_tokens.weight"] = "lm_head.weight";
    const std::vector<uint8_t> bytes = save_safetensors(entries, meta);
    const Model got = load_hf_from_memory(ckpt.config_json, bytes.data(), bytes.size(), "m");
    testing::expect_same_weights(got, want);
  }
}

TEST(HfLoader, UntiedModelWithoutLmHeadIsRejected) {
  const Model tied = hf_micro(true);
  const HfCheckpoint ckpt = save_hf(tied, "F32");  // stores no lm_head.weight
  std::string config = ckpt.config_json;
  const size_t at = config.find("\"tie_word_embeddings\": true");
  ASSERT_NE(at, std::string::npos);
  config.replace(at, 27, "\"tie_word_embeddings\": false");
  expect_load_error(
      [&] { load_hf_from_memory(config, ckpt.safetensors.data(), ckpt.safetensors.size(), "m"); },
      "m/model.safetensors", "lm_head.weight", "tensor is missing");
}

TEST(HfLoader, SaveRefusesAdjacentPairModels) {
  EXPECT_THROW(save_hf(testing::micro_model(true), "F32"), InvalidArgument);
  EXPECT_THROW(save_hf(hf_micro(true), "F8"), InvalidArgument);
}

TEST(SafetensorsFile, ParsesHandWrittenFile) {
  // Independent of save_safetensors: a header padded with spaces, a scalar and an F16 vector.
  const std::string header =
      R"({"b":{"dtype":"F16","shape":[2],"data_offsets":[4,8]},)"
      R"("a":{"dtype":"F32","shape":[],"data_offsets":[0,4]},"__metadata__":{"k":"v"}}   )";
  std::vector<uint8_t> bytes(8);
  testing::patch<uint64_t>(bytes, 0, header.size());
  bytes.insert(bytes.end(), header.begin(), header.end());
  for (uint8_t b : {0x00, 0x00, 0x80, 0x3F, 0x00, 0x3C, 0x00, 0xC0}) bytes.push_back(b);
  const SafetensorsFile f = parse_safetensors(bytes.data(), bytes.size(), "hand");
  EXPECT_EQ(f.data_offset, 8 + header.size());
  EXPECT_EQ(f.metadata.at("k"), "v");
  ASSERT_EQ(f.tensors.size(), 2u);
  EXPECT_EQ(f.tensors[0].name, "a") << "sorted by offset";
  EXPECT_EQ(f.tensors[0].n_elements, 1u) << "a scalar has one element";
  EXPECT_EQ(decode_tensor(decode_f32, f.tensor_data(f.tensors[0]), 1, "h", "a"),
            std::vector<float>{1.0f});
  EXPECT_EQ(decode_tensor(decode_f16, f.tensor_data(f.tensors[1]), 2, "h", "b"),
            (std::vector<float>{1.0f, -2.0f}));
}

}  // namespace
}  // namespace nanoserve
