// llama2.c v0 checkpoints: the real stories260K.bin, round trips, and bad input.
#include <gtest/gtest.h>

#include <chrono>
#include <climits>
#include <cmath>
#include <cstring>

#include "common/error.h"
#include "common/loaders/llama2c_loader.h"
#include "loader_test_files.h"
#include "test_support.h"

namespace nanoserve {
namespace {

using testing::expect_load_error;
using testing::micro_model;
using testing::patch;
using testing::peek;

TEST(Llama2cLoader, LoadsStories260KWithThePublishedConfig) {
  NANOSERVE_REQUIRE_DATA(path, "stories260K.bin");
  const Model m = load_llama2c(path);
  const ModelConfig& c = m.config;
  // Facts from the data README: dim=64 hidden_dim=172 n_layers=5 n_heads=8 n_kv_heads=4
  // vocab_size=512 seq_len=512, shared classifier, head_dim 8, adjacent-pair RoPE.
  EXPECT_EQ(c.dim, 64);
  EXPECT_EQ(c.hidden_dim, 172);
  EXPECT_EQ(c.n_layers, 5);
  EXPECT_EQ(c.n_heads, 8);
  EXPECT_EQ(c.n_kv_heads, 4);
  EXPECT_EQ(c.head_dim, 8);
  EXPECT_EQ(c.vocab_size, 512);
  EXPECT_EQ(c.max_seq_len, 512);
  EXPECT_TRUE(c.tied_classifier);
  EXPECT_EQ(c.rope_style, RopeStyle::kAdjacentPairs);
  EXPECT_EQ(c.rope_theta, 10000.0f);
  EXPECT_EQ(c.norm_eps, 1e-5f);
  EXPECT_TRUE(m.classifier.empty());
  EXPECT_NO_THROW(m.validate());
}

TEST(Llama2cLoader, Stories260KWeightsSitWhereTheLayoutSaysInTheRawFile) {
  NANOSERVE_REQUIRE_DATA(path, "stories260K.bin");
  const Model m = load_llama2c(path);
  const std::vector<uint8_t> raw = testing::read_bytes(path);
  // Offsets in floats after the 28-byte header, from the README's tensor order.
  const size_t d = 64, h = 172, L = 5, kv = 32, v = 512;
  const size_t embed = 0, rms_att = v * d, wq = rms_att + L * d, wk = wq + L * d * d;
  const size_t wv = wk + L * kv * d, wo = wv + L * kv * d, rms_ffn = wo + L * d * d;
  const size_t w1 = rms_ffn + L * d, w2 = w1 + L * h * d, w3 = w2 + L * d * h;
  const size_t final_norm = w3 + L * h * d;
  auto at = [&](size_t float_index) { return peek<float>(raw, 28 + 4 * float_index); };
  EXPECT_EQ(m.token_embedding.front(), at(embed));
  EXPECT_EQ(m.token_embedding.back(), at(rms_att - 1));
  EXPECT_EQ(m.layers[0].attn_norm[0], at(rms_att));
  EXPECT_EQ(m.layers[4].attn_norm[63], at(wq - 1));
  EXPECT_EQ(m.layers[2].wq[5], at(wq + 2 * d * d + 5));
  EXPECT_EQ(m.layers[1].wk[0], at(wk + kv * d));
  EXPECT_EQ(m.layers[3].wv.back(), at(wv + 4 * kv * d - 1));
  EXPECT_EQ(m.layers[0].wo[1], at(wo + 1));
  EXPECT_EQ(m.layers[4].ffn_norm[0], at(rms_ffn + 4 * d));
  EXPECT_EQ(m.layers[0].w1[0], at(w1));
  EXPECT_EQ(m.layers[4].w2.back(), at(w3 - 1));
  EXPECT_EQ(m.layers[4].w3.back(), at(final_norm - 1));
  EXPECT_EQ(m.final_norm.back(), at(final_norm + d - 1));
  // Then freq_cis_real/imag (seq_len * head_dim/2 each) end the file exactly.
  EXPECT_EQ(raw.size(), 28 + 4 * (final_norm + d + 2 * 512 * 4));
}

TEST(Llama2cLoader, RoundTripsTiedAndUntiedModels) {
  for (const bool tied : {true, false}) {
    const Model want = micro_model(tied);
    const std::vector<uint8_t> bytes = save_llama2c(want);
    // The header carries -vocab_size for an untied classifier (llama2.c's convention).
    EXPECT_EQ(peek<int32_t>(bytes, 20), tied ? 10 : -10);
    const Model got = load_llama2c_from_memory(bytes.data(), bytes.size(), "micro.bin");
    EXPECT_EQ(got.config.tied_classifier, tied);
    testing::expect_same_weights(got, want);
  }
}

TEST(Llama2cLoader, UntiedClassifierIsReadAfterTheSkippedFreqCis) {
  const Model want = micro_model(false);
  std::vector<uint8_t> bytes = save_llama2c(want);
  // The classifier is the last vocab*dim floats; the freq_cis tables sit just before it.
  const size_t cls = bytes.size() - 4 * 10 * 8;
  EXPECT_EQ(peek<float>(bytes, cls), want.classifier[0]);
  patch<float>(bytes, cls - 4, 123.0f);  // scribble on freq_cis: must not matter
  const Model got = load_llama2c_from_memory(bytes.data(), bytes.size(), "micro.bin");
  EXPECT_EQ(got.classifier, want.classifier);
}

TEST(Llama2cLoader, TruncatedFilesAreRejectedAtEveryCut) {
  const std::vector<uint8_t> full = save_llama2c(micro_model(true));
  for (size_t cut : {size_t(0), size_t(3), size_t(27), size_t(28), size_t(29), size_t(100),
                     full.size() / 2, full.size() - 1}) {
    SCOPED_TRACE("cut at " + std::to_string(cut));
    const std::vector<uint8_t> bytes(full.begin(), full.begin() + cut);
    expect_load_error([&] { load_llama2c_from_memory(bytes.data(), bytes.size(), "t.bin"); },
                      "t.bin", cut < 28 ? "header" : "file size");
  }
}

TEST(Llama2cLoader, TruncatedRealFileIsRejectedBeforeReadingTensors) {
  NANOSERVE_REQUIRE_DATA(path, "stories260K.bin");
  std::vector<uint8_t> bytes = testing::read_bytes(path);
  bytes.resize(bytes.size() - 4);
  const std::string cut = testing::write_temp_file("stories260K_cut.bin", bytes);
  expect_load_error([&] { load_llama2c(cut); }, cut, "file size",
                    "1056536 bytes, but the header (dim=64");
}

TEST(Llama2cLoader, TrailingBytesDisagreeWithTheHeader) {
  std::vector<uint8_t> bytes = save_llama2c(micro_model(true));
  bytes.resize(bytes.size() + 4);
  expect_load_error([&] { load_llama2c_from_memory(bytes.data(), bytes.size(), "t.bin"); }, "t.bin",
                    "file size");
}

TEST(Llama2cLoader, NamesTheNewerLlama2cExportVersions) {
  std::vector<uint8_t> bytes = save_llama2c(micro_model(true));
  const char magic[4] = {'a', 'k', '4', '2'};  // export.py --version 1/2 writes this first
  std::memcpy(bytes.data(), magic, 4);
  expect_load_error([&] { load_llama2c_from_memory(bytes.data(), bytes.size(), "v1.bin"); },
                    "v1.bin", "header", "llama2.c v1/v2 export");
}

TEST(Llama2cLoader, NanInTheRealFileNamesTheTensor) {
  NANOSERVE_REQUIRE_DATA(path, "stories260K.bin");
  std::vector<uint8_t> bytes = testing::read_bytes(path);
  // w2 of layer 0 begins after the embedding, 5 rms_att, wq, wk, wv, wo and rms_ffn, and w1:
  // (512*64 + 5*64 + 5*64*64 + 2*5*32*64 + 5*64*64 + 5*64 + 5*172*64) floats.
  const size_t w2 = 512 * 64 + 5 * 64 + 5 * 64 * 64 + 2 * 5 * 32 * 64 + 5 * 64 * 64 + 5 * 64 +
                    5 * 172 * 64;
  patch<float>(bytes, 28 + 4 * (w2 + 10), std::nanf(""));
  const std::string bad = testing::write_temp_file("stories260K_nan.bin", bytes);
  expect_load_error([&] { load_llama2c(bad); }, bad, "w2[layer 0]", "element 10 is NaN");
}

TEST(Llama2cLoader, RejectsImpossibleHeaderFields) {
  const std::vector<uint8_t> good = save_llama2c(micro_model(true));
  struct Case {
    int field;
    int32_t value;
    const char* expected_field;
  };
  const Case cases[] = {
      {0, 0, "header.dim"},
      {0, -8, "header.dim"},
      {1, -1, "header.hidden_dim"},
      {2, 0, "header.n_layers"},
      {3, 3, "header.n_heads"},   // 3 does not divide dim 8
      {3, 16, "header.n_heads"},  // more heads than dims
      {4, 0, "header.n_kv_heads"},
      {4, 4, "n_kv_heads"},  // more KV heads than heads
      {5, 0, "vocab_size"},
      {5, INT32_MIN, "vocab_size"},
      {6, 0, "header.seq_len"},
      {2, 1 << 30, "n_layers"},  // absurd: validate() bounds it
      {1, INT32_MAX, "hidden_dim"},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(std::string(k.expected_field) + " = " + std::to_string(k.value));
    std::vector<uint8_t> bytes = good;
    patch<int32_t>(bytes, 4 * k.field, k.value);
    expect_load_error([&] { load_llama2c_from_memory(bytes.data(), bytes.size(), "h.bin"); },
                      "h.bin", k.expected_field);
  }
}

TEST(Llama2cLoader, LargestValidHeaderFailsFastOnFileSize) {
  // Every field at its validate() bound: the implied size is ~10^16 bytes. The loader must
  // compare it with the file size and stop, allocating nothing.
  std::vector<uint8_t> bytes = save_llama2c(micro_model(true));
  const int32_t header[7] = {65536, 262144, 1024, 1024, 1024, 1 << 24, 1 << 20};
  for (int i = 0; i < 7; ++i) patch<int32_t>(bytes, 4 * i, header[i]);
  const auto start = std::chrono::steady_clock::now();
  expect_load_error([&] { load_llama2c_from_memory(bytes.data(), bytes.size(), "big.bin"); },
                    "big.bin", "file size", "implies");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(100));
}

TEST(Llama2cLoader, NanWeightNamesTensorAndLayer) {
  const Model want = micro_model(true);
  std::vector<uint8_t> bytes = save_llama2c(want);
  // wq of layer 1 starts after the header, embedding (10*8), rms_att (2*8), wq of layer 0 (8*8).
  patch<float>(bytes, 28 + 4 * (80 + 16 + 64 + 3), std::nanf(""));
  expect_load_error([&] { load_llama2c_from_memory(bytes.data(), bytes.size(), "nan.bin"); },
                    "nan.bin", "wq[layer 1]", "element 3 is NaN");
}

TEST(Llama2cLoader, SaveRefusesConfigsTheFormatCannotHold) {
  Model m = micro_model(true);
  m.config.rope_style = RopeStyle::kRotateHalf;
  EXPECT_THROW(save_llama2c(m), InvalidArgument);
  m = micro_model(true);
  m.config.rope_theta = 500000.0f;
  EXPECT_THROW(save_llama2c(m), InvalidArgument);
}

TEST(Llama2cLoader, MissingFileIsALoadError) {
  const std::string missing = ::nanoserve::testing::temp_dir() + "missing.bin";
  expect_load_error([&] { load_llama2c(missing); }, missing, "file");
}

}  // namespace
}  // namespace nanoserve
