#include "common/loaders/llama2c_loader.h"

#include <cmath>
#include <cstring>

#include "common/error.h"
#include "common/loaders/byte_reader.h"
#include "common/loaders/mapped_file.h"
#include "common/loaders/tensor_decode.h"

namespace nanoserve {

namespace {

constexpr float kLlama2cRopeTheta = 10000.0f;
constexpr float kLlama2cNormEps = 1e-5f;

/// The header fields in file order, for error messages.
constexpr const char* kHeaderFields[7] = {
    "header.dim",        "header.hidden_dim", "header.n_layers", "header.n_heads",
    "header.n_kv_heads", "header.vocab_size", "header.seq_len"};

ModelConfig config_from_header(const int32_t h[7], const std::string& name) {
  for (int i = 0; i < 7; ++i) {
    if (i != 5 && h[i] <= 0) {
      throw LoadError(name, kHeaderFields[i], std::to_string(h[i]) + " must be positive");
    }
  }
  if (h[3] > h[0] || h[0] % h[3] != 0) {
    throw LoadError(name, kHeaderFields[3],
                    std::to_string(h[3]) + " does not divide dim=" + std::to_string(h[0]));
  }
  ModelConfig c;
  c.name = name;
  c.dim = h[0];
  c.hidden_dim = h[1];
  c.n_layers = h[2];
  c.n_heads = h[3];
  c.n_kv_heads = h[4];
  c.head_dim = h[0] / h[3];
  // int64: -INT32_MIN does not fit in an int32.
  const int64_t vocab = h[5] < 0 ? -int64_t(h[5]) : int64_t(h[5]);
  c.vocab_size = vocab > (int64_t(1) << 30) ? int(1 << 30) : int(vocab);  // validate() rejects
  c.max_seq_len = h[6];
  c.rope_theta = kLlama2cRopeTheta;
  c.rope_style = RopeStyle::kAdjacentPairs;
  c.norm_eps = kLlama2cNormEps;
  c.tied_classifier = h[5] > 0;
  c.validate(name);
  return c;
}

/// Floats of the stored freq_cis tables: real and imaginary parts, (seq_len, head_dim/2) each.
uint64_t freq_cis_floats(const ModelConfig& c) { return uint64_t(c.max_seq_len) * c.head_dim; }

}  // namespace

Model load_llama2c(const std::string& path) {
  const MappedFile file(path);
  return load_llama2c_from_memory(file.data(), file.size(), path);
}

Model load_llama2c_from_memory(const uint8_t* data, size_t size, const std::string& name) {
  ByteReader in(data, size, name);
  if (size < kLlama2cHeaderBytes) {
    in.fail("header", "the file has " + std::to_string(size) + " bytes, fewer than the " +
                          std::to_string(kLlama2cHeaderBytes) + "-byte llama2.c header");
  }
  // llama2.c's later export versions (v1 fp32, v2 int8) start with the magic "ak42"; as a v0
  // header it would read as a meaningless dim, so name the real problem instead.
  if (std::memcmp(data, "ak42", 4) == 0) {
    in.fail("header", "starts with \"ak42\", a llama2.c v1/v2 export; only v0 (legacy, "
                      "`export.py --version 0`) is supported");
  }
  int32_t header[7];
  for (int i = 0; i < 7; ++i) header[i] = in.read<int32_t>(kHeaderFields[i]);

  Model m;
  m.source = name;
  m.config = config_from_header(header, name);
  const ModelConfig& c = m.config;

  // Validate the whole file size before allocating anything: validate() bounds every field,
  // so these products fit in 64 bits, but checked arithmetic keeps that an explicit fact.
  const uint64_t weights = uint64_t(c.param_count());
  const uint64_t floats = checked_add(weights, freq_cis_floats(c), name, "file size");
  const uint64_t expected = checked_add(
      kLlama2cHeaderBytes, checked_mul(floats, 4, name, "file size"), name, "file size");
  if (expected != size) {
    in.fail(
        "file size",
        std::to_string(size) + " bytes, but the header (dim=" + std::to_string(c.dim) +
            " hidden_dim=" + std::to_string(c.hidden_dim) +
            " n_layers=" + std::to_string(c.n_layers) + " n_heads=" + std::to_string(c.n_heads) +
            " n_kv_heads=" + std::to_string(c.n_kv_heads) +
            " vocab_size=" + std::to_string(header[5]) +
            " seq_len=" + std::to_string(c.max_seq_len) + ") implies " + std::to_string(expected));
  }

  const uint64_t d = c.dim, h = c.hidden_dim, q = c.q_dim(), kv = c.kv_dim();
  auto next = [&](uint64_t n, const std::string& tensor) {
    return decode_tensor(decode_f32, in.read_bytes(n * 4, tensor), n, name, tensor);
  };
  // Each per-layer tensor is stored for all layers back to back.
  auto per_layer = [&](const char* tensor, uint64_t n, std::vector<float> LayerWeights::*field) {
    for (int l = 0; l < c.n_layers; ++l) {
      m.layers[l].*field = next(n, std::string(tensor) + "[layer " + std::to_string(l) + "]");
    }
  };
  m.token_embedding = next(uint64_t(c.vocab_size) * d, "token_embedding_table");
  m.layers.resize(c.n_layers);
  per_layer("rms_att_weight", d, &LayerWeights::attn_norm);
  per_layer("wq", q * d, &LayerWeights::wq);
  per_layer("wk", kv * d, &LayerWeights::wk);
  per_layer("wv", kv * d, &LayerWeights::wv);
  per_layer("wo", d * q, &LayerWeights::wo);
  per_layer("rms_ffn_weight", d, &LayerWeights::ffn_norm);
  per_layer("w1", h * d, &LayerWeights::w1);
  per_layer("w2", d * h, &LayerWeights::w2);
  per_layer("w3", h * d, &LayerWeights::w3);
  m.final_norm = next(d, "rms_final_weight");
  in.skip(freq_cis_floats(c) * 4, "freq_cis");
  if (!c.tied_classifier) m.classifier = next(uint64_t(c.vocab_size) * d, "wcls");
  m.validate();
  return m;
}

std::vector<uint8_t> save_llama2c(const Model& model) {
  const ModelConfig& c = model.config;
  if (c.head_dim * c.n_heads != c.dim || c.rope_theta != kLlama2cRopeTheta ||
      c.norm_eps != kLlama2cNormEps || c.rope_style != RopeStyle::kAdjacentPairs ||
      c.attention_bias || c.rope_scaling.type != RopeScalingType::kNone ||
      !c.rope_scaling.freq_factors.empty()) {
    throw InvalidArgument("save_llama2c: " + model.source +
                          " needs head_dim=dim/n_heads, rope theta 1e4, norm eps 1e-5, "
                          "adjacent-pair RoPE, no biases and no rope_scaling to be stored in "
                          "llama2.c v0 format");
  }
  model.validate();
  std::vector<uint8_t> out;
  auto put = [&out](const void* p, size_t bytes) {
    const auto* b = static_cast<const uint8_t*>(p);
    out.insert(out.end(), b, b + bytes);
  };
  auto put_floats = [&put](const std::vector<float>& v) { put(v.data(), v.size() * 4); };
  const int32_t header[7] = {c.dim,        c.hidden_dim,
                             c.n_layers,   c.n_heads,
                             c.n_kv_heads, c.tied_classifier ? c.vocab_size : -c.vocab_size,
                             c.max_seq_len};
  put(header, sizeof header);
  put_floats(model.token_embedding);
  for (auto field : {&LayerWeights::attn_norm, &LayerWeights::wq, &LayerWeights::wk,
                     &LayerWeights::wv, &LayerWeights::wo, &LayerWeights::ffn_norm,
                     &LayerWeights::w1, &LayerWeights::w2, &LayerWeights::w3}) {
    for (const LayerWeights& w : model.layers) put_floats(w.*field);
  }
  put_floats(model.final_norm);
  // freq_cis: cos (all positions), then sin, of pos * theta^(-2i/head_dim).
  for (int part = 0; part < 2; ++part) {
    for (int pos = 0; pos < c.max_seq_len; ++pos) {
      for (int i = 0; i < c.head_dim / 2; ++i) {
        const double angle = pos * std::pow(double(c.rope_theta), -2.0 * i / c.head_dim);
        const float v = float(part == 0 ? std::cos(angle) : std::sin(angle));
        put(&v, 4);
      }
    }
  }
  if (!c.tied_classifier) put_floats(model.classifier);
  return out;
}

}  // namespace nanoserve
