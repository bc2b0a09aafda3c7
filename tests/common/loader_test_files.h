#pragma once
/// \file
/// \brief Small models and byte-patching helpers shared by the loader tests.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/model.h"

namespace nanoserve::testing {

/// \brief dim 8, hidden 12, 2 layers, 2 heads, 1 KV head (GQA), head_dim 4, vocab 10, ctx 6.
inline ModelConfig micro_config(bool tied) {
  ModelConfig c;
  c.name = "micro";
  c.dim = 8;
  c.hidden_dim = 12;
  c.n_layers = 2;
  c.n_heads = 2;
  c.n_kv_heads = 1;
  c.head_dim = 4;
  c.vocab_size = 10;
  c.max_seq_len = 6;
  c.tied_classifier = tied;
  return c;
}

/// \brief Tensor number `k` holds n/64 with n = (37 k + 11 i) mod 255 - 127: every value is
/// exact in fp16 and bf16 (8 significant bits), and each tensor has its own sequence.
inline std::vector<float> micro_tensor(int k, size_t n) {
  std::vector<float> t(n);
  for (size_t i = 0; i < n; ++i) t[i] = float(int((37 * k + 11 * i) % 255) - 127) / 64.0f;
  return t;
}

/// \brief The micro model with `micro_tensor` weights.
inline Model micro_model(bool tied) {
  Model m;
  m.config = micro_config(tied);
  m.source = "micro";
  const ModelConfig& c = m.config;
  const size_t d = c.dim, h = c.hidden_dim, q = c.q_dim(), kv = c.kv_dim(), v = c.vocab_size;
  int k = 0;
  m.token_embedding = micro_tensor(k++, v * d);
  m.layers.resize(c.n_layers);
  for (LayerWeights& w : m.layers) {
    w.attn_norm = micro_tensor(k++, d);
    w.wq = micro_tensor(k++, q * d);
    w.wk = micro_tensor(k++, kv * d);
    w.wv = micro_tensor(k++, kv * d);
    w.wo = micro_tensor(k++, d * q);
    w.ffn_norm = micro_tensor(k++, d);
    w.w1 = micro_tensor(k++, h * d);
    w.w2 = micro_tensor(k++, d * h);
    w.w3 = micro_tensor(k++, h * d);
  }
  m.final_norm = micro_tensor(k++, d);
  if (!tied) m.classifier = micro_tensor(k++, v * d);
  return m;
}

/// \brief Expects every tensor of `got` to equal `want` exactly.
inline void expect_same_weights(const Model& got, const Model& want) {
  EXPECT_EQ(got.token_embedding, want.token_embedding) << "token_embedding";
  ASSERT_EQ(got.layers.size(), want.layers.size());
  for (size_t l = 0; l < got.layers.size(); ++l) {
    const LayerWeights &a = got.layers[l], &b = want.layers[l];
    EXPECT_EQ(a.attn_norm, b.attn_norm) << "layer " << l << " attn_norm";
    EXPECT_EQ(a.wq, b.wq) << "layer " << l << " wq";
    EXPECT_EQ(a.wk, b.wk) << "layer " << l << " wk";
    EXPECT_EQ(a.wv, b.wv) << "layer " << l << " wv";
    EXPECT_EQ(a.wo, b.wo) << "layer " << l << " wo";
    EXPECT_EQ(a.ffn_norm, b.ffn_norm) << "layer " << l << " ffn_norm";
    EXPECT_EQ(a.w1, b.w1) << "layer " << l << " w1";
    EXPECT_EQ(a.w2, b.w2) << "layer " << l << " w2";
    EXPECT_EQ(a.w3, b.w3) << "layer " << l << " w3";
    EXPECT_EQ(a.bq, b.bq) << "layer " << l << " bq";
    EXPECT_EQ(a.bk, b.bk) << "layer " << l << " bk";
    EXPECT_EQ(a.bv, b.bv) << "layer " << l << " bv";
  }
  EXPECT_EQ(got.final_norm, want.final_norm) << "final_norm";
  EXPECT_EQ(got.classifier_weights(), want.classifier_weights()) << "classifier";
}

/// \brief Overwrites bytes at `offset` with the object representation of `value`.
template <typename T>
void patch(std::vector<uint8_t>& bytes, size_t offset, const T& value) {
  ASSERT_LE(offset + sizeof(T), bytes.size());
  std::memcpy(bytes.data() + offset, &value, sizeof(T));
}

/// \brief Reads a little-endian value at `offset`.
template <typename T>
T peek(const std::vector<uint8_t>& bytes, size_t offset) {
  T value{};
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

/// \brief Offset of the first occurrence of `text` in `bytes` (npos when absent).
inline size_t find_bytes(const std::vector<uint8_t>& bytes, const std::string& text) {
  const auto it = std::search(bytes.begin(), bytes.end(), text.begin(), text.end());
  return it == bytes.end() ? std::string::npos : size_t(it - bytes.begin());
}

/// \brief Offset of the characters of the GGUF string `text` (uint64 length + bytes) in
/// `bytes`, so that "output.weight" is not found inside "blk.0.attn_output.weight".
inline size_t find_gguf_string(const std::vector<uint8_t>& bytes, const std::string& text) {
  std::string encoded(8, '\0');
  const uint64_t n = text.size();
  std::memcpy(encoded.data(), &n, 8);
  const size_t at = find_bytes(bytes, encoded + text);
  return at == std::string::npos ? at : at + 8;
}

/// \brief Runs `fn`, expects a `LoadError` whose field is `field` and whose message names
/// `file` and contains `needle`; returns the message.
template <typename Fn>
std::string expect_load_error(Fn&& fn, const std::string& file, const std::string& field,
                              const std::string& needle = "") {
  try {
    fn();
  } catch (const LoadError& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.file(), file) << what;
    EXPECT_EQ(e.field(), field) << what;
    EXPECT_NE(what.find(file), std::string::npos) << what;
    EXPECT_NE(what.find(needle), std::string::npos) << "'" << needle << "' not in: " << what;
    return what;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected LoadError, got: " << e.what();
    return {};
  }
  ADD_FAILURE() << "expected LoadError(" << file << ", " << field << ")";
  return {};
}

}  // namespace nanoserve::testing
