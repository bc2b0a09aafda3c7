#include "apps/bench_load/checkpoint_writers.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/loaders/ggml_types.h"
#include "common/loaders/gguf_loader.h"
#include "common/loaders/gguf_quant_blocks.h"
#include "common/loaders/hf_loader.h"
#include "common/loaders/synthetic_model.h"
#include "common/loaders/tensor_decode.h"

namespace nanoserve::bench {

namespace {

/// One tensor of the file: the Model field it holds and its shape (outermost first).
struct Entry {
  std::string field;
  int layer;
  std::vector<std::uint64_t> shape;
};

/// Every tensor of a model with `c`, in the order the files store them.
std::vector<Entry> entries(const ModelConfig& c) {
  const std::uint64_t d = c.dim, h = c.hidden_dim, q = c.q_dim(), kv = c.kv_dim(), v = c.vocab_size;
  std::vector<Entry> out = {{"token_embedding", -1, {v, d}}};
  for (int l = 0; l < c.n_layers; ++l) {
    for (const Entry& e : std::vector<Entry>{{"attn_norm", l, {d}}, {"wq", l, {q, d}},
                                             {"wk", l, {kv, d}}, {"wv", l, {kv, d}},
                                             {"wo", l, {d, q}}, {"ffn_norm", l, {d}},
                                             {"w1", l, {h, d}}, {"w2", l, {d, h}},
                                             {"w3", l, {h, d}}}) {
      out.push_back(e);
    }
  }
  out.push_back({"final_norm", -1, {d}});
  if (!c.tied_classifier) out.push_back({"classifier", -1, {v, d}});
  return out;
}

/// Whether `e` is stored as Q4_0: matrices whose rows are whole 32-element blocks (others F16,
/// as llama.cpp falls back; norms F32).
bool quantized(const Entry& e) { return e.shape.size() == 2 && e.shape[1] % 32 == 0; }

std::string hf_name(const Entry& e) {
  if (e.field == "token_embedding") return "model.embed_tokens.weight";
  if (e.field == "final_norm") return "model.norm.weight";
  if (e.field == "classifier") return "lm_head.weight";
  const std::string p = "model.layers." + std::to_string(e.layer) + ".";
  if (e.field == "attn_norm") return p + "input_layernorm.weight";
  if (e.field == "ffn_norm") return p + "post_attention_layernorm.weight";
  if (e.field == "wq") return p + "self_attn.q_proj.weight";
  if (e.field == "wk") return p + "self_attn.k_proj.weight";
  if (e.field == "wv") return p + "self_attn.v_proj.weight";
  if (e.field == "wo") return p + "self_attn.o_proj.weight";
  if (e.field == "w1") return p + "mlp.gate_proj.weight";
  if (e.field == "w2") return p + "mlp.down_proj.weight";
  return p + "mlp.up_proj.weight";
}

std::uint64_t elements(const Entry& e) {
  std::uint64_t n = 1;
  for (std::uint64_t s : e.shape) n *= s;
  return n;
}

void write_or_throw(std::ofstream& out, const void* data, std::size_t n, const std::string& path) {
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
  if (!out) throw Error("bench_load: cannot write " + path);
}

// GGUF primitives (little-endian, as every supported machine is).
template <typename T>
void put(std::vector<std::uint8_t>& b, T v) {
  const auto* p = reinterpret_cast<const std::uint8_t*>(&v);
  b.insert(b.end(), p, p + sizeof v);
}
void put_string(std::vector<std::uint8_t>& b, const std::string& s) {
  put<std::uint64_t>(b, s.size());
  b.insert(b.end(), s.begin(), s.end());
}

}  // namespace

std::int64_t write_hf_bf16(const ModelConfig& config, std::uint64_t seed, const std::string& dir) {
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/config.json") << hf_config_json(config, "BF16");
  const std::vector<Entry> all = entries(config);
  nlohmann::json header = {{"__metadata__", {{"format", "pt"}}}};
  std::uint64_t at = 0;
  for (const Entry& e : all) {
    const std::uint64_t bytes = elements(e) * 2;
    header[hf_name(e)] = {{"dtype", "BF16"}, {"shape", e.shape}, {"data_offsets", {at, at + bytes}}};
    at += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the data section 8-byte aligned
  const std::string path = dir + "/model.safetensors";
  std::ofstream out(path, std::ios::binary);
  const std::uint64_t n = text.size();
  write_or_throw(out, &n, sizeof n, path);
  write_or_throw(out, text.data(), text.size(), path);
  for (const Entry& e : all) {
    const std::vector<std::uint8_t> bytes = encode_bf16(synthetic_tensor(config, seed, e.field, e.layer));
    write_or_throw(out, bytes.data(), bytes.size(), path);
  }
  return static_cast<std::int64_t>(sizeof n + text.size() + at);
}

std::int64_t write_gguf_q4_0(const ModelConfig& config, std::uint64_t seed,
                             const std::string& path) {
  constexpr std::uint64_t kAlign = 32;
  constexpr std::uint32_t kString = 8, kUint32 = 4, kFloat32 = 6;
  const std::vector<Entry> all = entries(config);
  std::vector<std::uint8_t> head = {'G', 'G', 'U', 'F'};
  put<std::uint32_t>(head, 3);
  put<std::uint64_t>(head, all.size());
  const std::vector<std::pair<std::string, std::uint32_t>> ints = {
      {"llama.embedding_length", config.dim},        {"llama.feed_forward_length", config.hidden_dim},
      {"llama.block_count", config.n_layers},         {"llama.attention.head_count", config.n_heads},
      {"llama.attention.head_count_kv", config.n_kv_heads},
      {"llama.attention.key_length", config.head_dim}, {"llama.context_length", config.max_seq_len}};
  put<std::uint64_t>(head, 1 + ints.size() + 2);
  put_string(head, "general.architecture");
  put<std::uint32_t>(head, kString);
  put_string(head, "llama");
  for (const auto& [key, value] : ints) {
    put_string(head, key);
    put<std::uint32_t>(head, kUint32);
    put<std::uint32_t>(head, value);
  }
  for (const auto& [key, value] : {std::pair<const char*, float>{"llama.rope.freq_base", config.rope_theta},
                                   {"llama.attention.layer_norm_rms_epsilon", config.norm_eps}}) {
    put_string(head, key);
    put<std::uint32_t>(head, kFloat32);
    put<float>(head, value);
  }
  std::uint64_t at = 0;
  std::vector<std::uint64_t> sizes;
  for (const Entry& e : all) {
    const GgufField g = gguf_field(config, e.field, e.layer);
    const bool q = quantized(e);
    put_string(head, g.tensor);
    put<std::uint32_t>(head, static_cast<std::uint32_t>(g.dims.size()));
    for (std::uint64_t dim : g.dims) put<std::uint64_t>(head, dim);
    put<std::uint32_t>(head, q ? kGgmlTypeQ4_0 : e.shape.size() == 2 ? kGgmlTypeF16 : kGgmlTypeF32);
    put<std::uint64_t>(head, at);
    const std::uint64_t bytes =
        q ? elements(e) / 32 * 18 : elements(e) * (e.shape.size() == 2 ? 2 : 4);
    sizes.push_back(bytes);
    at += (bytes + kAlign - 1) / kAlign * kAlign;
  }
  head.resize((head.size() + kAlign - 1) / kAlign * kAlign, 0);
  std::ofstream out(path, std::ios::binary);
  write_or_throw(out, head.data(), head.size(), path);
  const std::vector<std::uint8_t> zeros(kAlign, 0);
  for (std::size_t i = 0; i < all.size(); ++i) {
    const std::vector<float> values = synthetic_tensor(config, seed, all[i].field, all[i].layer);
    const std::vector<std::uint8_t> bytes = quantized(all[i])          ? encode_q4_0(values)
                                            : all[i].shape.size() == 2 ? encode_f16(values)
                                                                       : encode_f32(values);
    write_or_throw(out, bytes.data(), bytes.size(), path);
    write_or_throw(out, zeros.data(), (kAlign - sizes[i] % kAlign) % kAlign, path);
  }
  return static_cast<std::int64_t>(head.size() + at);
}

}  // namespace nanoserve::bench
