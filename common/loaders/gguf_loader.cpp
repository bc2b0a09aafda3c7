#include "common/loaders/gguf_loader.h"

#include <cfloat>
#include <climits>

#include "common/error.h"
#include "common/loaders/mapped_file.h"
#include "common/loaders/tensor_decode.h"

namespace nanoserve {

namespace {

constexpr float kDefaultRopeTheta = 10000.0f;  // llama.cpp's default for `llama`

std::string dims_to_string(const std::vector<uint64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

/// An integer key in [lo, hi] (ConfigLimits), checked as it is read: nothing is derived from
/// a value outside its range (an embedding length of 0 would reach the RoPE check as
/// head_dim 0).
int get_dim(const GgufFile& f, const std::string& key, std::optional<int> fallback, int64_t lo,
            int64_t hi) {
  const std::optional<int64_t> v = f.metadata.get_int(key);
  if (!v) {
    if (fallback) return *fallback;
    throw LoadError(f.name, key, "is missing");
  }
  check_config_field(f.name, key, *v, lo, hi);
  return int(*v);
}

/// A positive, finite float key narrowed to float.
float get_positive_float(const GgufFile& f, const std::string& key, std::optional<float> fallback) {
  const std::optional<double> v = f.metadata.get_float(key);
  if (!v) {
    if (fallback) return *fallback;
    throw LoadError(f.name, key, "is missing");
  }
  if (!(*v > 0.0) || *v > double(FLT_MAX)) {
    throw LoadError(f.name, key, std::to_string(*v) + " is not a positive finite float");
  }
  return float(*v);
}

const GgufTensorInfo& require_tensor(const GgufFile& f, const std::string& name) {
  const GgufTensorInfo* t = f.find_tensor(name);
  if (t == nullptr) throw LoadError(f.name, name, "tensor is missing");
  return *t;
}

void check_shape(const GgufFile& f, const GgufTensorInfo& t, const std::vector<uint64_t>& dims) {
  if (t.dims != dims) {
    throw LoadError(f.name, t.name,
                    "has shape " + dims_to_string(t.dims) + ", expected " + dims_to_string(dims) +
                        " (GGUF order, innermost first)");
  }
}

/// Decodes tensor `name` after checking its shape (innermost first) and type.
std::vector<float> read_tensor(const GgufFile& f, const std::string& name,
                               const std::vector<uint64_t>& dims) {
  const GgufTensorInfo& t = require_tensor(f, name);
  check_shape(f, t, dims);
  if (t.type->decode == nullptr) {
    throw LoadError(f.name, name,
                    std::string("ggml type ") + t.type->name +
                        " is not supported yet (supported: " + decodable_ggml_type_names() + ")");
  }
  return decode_tensor(t.type->decode, f.tensor_data(t), t.n_elements, f.name, name);
}

}  // namespace

ModelConfig gguf_model_config(const GgufFile& f) {
  const std::optional<std::string> arch = f.metadata.get_string("general.architecture");
  if (!arch) throw LoadError(f.name, "general.architecture", "is missing");
  if (*arch != "llama" && *arch != "qwen2") {
    throw LoadError(f.name, "general.architecture",
                    "\"" + *arch + "\" is not supported (only \"llama\" and \"qwen2\")");
  }
  const std::string p = *arch + ".";
  ModelConfig c;
  c.name = f.name;
  c.architecture = *arch;
  c.attention_bias = *arch == "qwen2";
  using L = ConfigLimits;
  c.dim = get_dim(f, p + "embedding_length", std::nullopt, 1, L::kMaxDim);
  c.hidden_dim = get_dim(f, p + "feed_forward_length", std::nullopt, 1, L::kMaxHiddenDim);
  c.n_layers = get_dim(f, p + "block_count", std::nullopt, 1, L::kMaxLayers);
  c.n_heads = get_dim(f, p + "attention.head_count", std::nullopt, 1, L::kMaxHeads);
  c.n_kv_heads = get_dim(f, p + "attention.head_count_kv", c.n_heads, 1, c.n_heads);
  c.max_seq_len = get_dim(f, p + "context_length", std::nullopt, 1, L::kMaxSeqLen);
  // head_dim: explicit key_length when present (it may differ from dim / n_heads).
  if (f.metadata.find(p + "attention.key_length") == nullptr && c.dim % c.n_heads != 0) {
    throw LoadError(f.name, p + "attention.head_count",
                    std::to_string(c.n_heads) + " does not divide embedding_length=" +
                        std::to_string(c.dim) + " and attention.key_length is absent");
  }
  c.head_dim = get_dim(f, p + "attention.key_length", c.dim / c.n_heads, 2, L::kMaxHeadDim);
  if (f.metadata.find(p + "attention.key_length") == nullptr) {  // derived: name both keys
    check_config_field(f.name, p + "embedding_length / " + p + "attention.head_count",
                       c.head_dim, 2, L::kMaxHeadDim);
  }
  if (get_dim(f, p + "attention.value_length", c.head_dim, 0, INT_MAX) != c.head_dim) {
    throw LoadError(f.name, p + "attention.value_length", "differs from key_length");
  }
  if (get_dim(f, p + "rope.dimension_count", c.head_dim, 0, INT_MAX) != c.head_dim) {
    throw LoadError(f.name, p + "rope.dimension_count",
                    "partial rotary embeddings (rotating fewer than head_dim=" +
                        std::to_string(c.head_dim) + " dimensions) are not supported");
  }
  if (const auto scaling = f.metadata.get_string(p + "rope.scaling.type");
      scaling && *scaling != "none") {
    if (*scaling != "linear") {
      throw LoadError(f.name, p + "rope.scaling.type",
                      "\"" + *scaling + "\" is not supported (only \"none\" and \"linear\")");
    }
    c.rope_scaling.type = RopeScalingType::kLinear;
    c.rope_scaling.factor = get_positive_float(f, p + "rope.scaling.factor", std::nullopt);
  }
  // Llama 3.1+ GGUFs carry their llama3 frequency rule as a tensor of per-pair divisors
  // (llama.cpp's converter writes it, and no rope.scaling keys); ModelConfig::validate checks
  // its values.
  if (const GgufTensorInfo* t = f.find_tensor("rope_freqs.weight"); t != nullptr) {
    const uint64_t pairs = uint64_t(c.head_dim / 2);
    c.rope_scaling.freq_factors = read_tensor(f, "rope_freqs.weight", {pairs});
  }
  c.rope_theta = get_positive_float(f, p + "rope.freq_base", kDefaultRopeTheta);
  // GGUF llama permutes wq/wk rows for adjacent pairs (the file comment); qwen2 keeps the
  // Hugging Face rows and llama.cpp rotates it NeoX-style (rotate half).
  c.rope_style = *arch == "qwen2" ? RopeStyle::kRotateHalf : RopeStyle::kAdjacentPairs;
  c.norm_eps = get_positive_float(f, p + "attention.layer_norm_rms_epsilon", std::nullopt);

  // The vocabulary size is the embedding's row count; the tokenizer must agree with it.
  const GgufTensorInfo& embd = require_tensor(f, "token_embd.weight");
  if (embd.dims.size() != 2 || embd.dims[1] > INT_MAX) {
    throw LoadError(f.name, "token_embd.weight",
                    "has shape " + dims_to_string(embd.dims) + ", expected [dim, vocab]");
  }
  c.vocab_size = int(embd.dims[1]);
  if (const GgufArray* tokens = f.metadata.get_array("tokenizer.ggml.tokens");
      tokens != nullptr && tokens->items.size() != embd.dims[1]) {
    throw LoadError(f.name, "tokenizer.ggml.tokens",
                    std::to_string(tokens->items.size()) + " tokens, but token_embd.weight has " +
                        std::to_string(embd.dims[1]) + " rows");
  }
  c.tied_classifier = f.find_tensor("output.weight") == nullptr;
  c.validate(f.name);
  return c;
}

GgufField gguf_field(const ModelConfig& c, const std::string& field, int layer) {
  const uint64_t d = c.dim, h = c.hidden_dim, q = c.q_dim(), kv = c.kv_dim(), v = c.vocab_size;
  if (field == "token_embedding") return {"token_embd.weight", {d, v}};
  if (field == "final_norm") return {"output_norm.weight", {d}};
  if (field == "classifier") return {"output.weight", {d, v}};
  const std::string b = "blk." + std::to_string(layer) + ".";
  if (field == "attn_norm") return {b + "attn_norm.weight", {d}};
  if (field == "wq") return {b + "attn_q.weight", {d, q}};
  if (field == "wk") return {b + "attn_k.weight", {d, kv}};
  if (field == "wv") return {b + "attn_v.weight", {d, kv}};
  if (field == "bq") return {b + "attn_q.bias", {q}};
  if (field == "bk") return {b + "attn_k.bias", {kv}};
  if (field == "bv") return {b + "attn_v.bias", {kv}};
  if (field == "wo") return {b + "attn_output.weight", {q, d}};
  if (field == "ffn_norm") return {b + "ffn_norm.weight", {d}};
  if (field == "w1") return {b + "ffn_gate.weight", {d, h}};
  if (field == "w2") return {b + "ffn_down.weight", {h, d}};
  if (field == "w3") return {b + "ffn_up.weight", {d, h}};
  throw InvalidArgument("gguf_loader: no Model field '" + field + "'");
}

const GgufTensorInfo& gguf_field_tensor(const GgufFile& f, const ModelConfig& c,
                                        const std::string& field, int layer) {
  const GgufField g = gguf_field(c, field, layer);
  const GgufTensorInfo& t = require_tensor(f, g.tensor);
  check_shape(f, t, g.dims);
  return t;
}

Model model_from_gguf(const GgufFile& f) {
  Model m;
  m.source = f.name;
  m.config = gguf_model_config(f);
  const ModelConfig& c = m.config;
  // Tensor byte ranges were checked against the file when parsing, so the memory allocated
  // below is bounded by the file size (times 2 for fp16/bf16 sources).
  auto read = [&](const char* field, int layer) {
    const GgufField g = gguf_field(c, field, layer);
    return read_tensor(f, g.tensor, g.dims);
  };
  m.token_embedding = read("token_embedding", -1);
  m.layers.resize(c.n_layers);
  for (int l = 0; l < c.n_layers; ++l) {
    LayerWeights& w = m.layers[l];
    w.attn_norm = read("attn_norm", l);
    w.wq = read("wq", l);
    w.wk = read("wk", l);
    w.wv = read("wv", l);
    if (c.attention_bias) {
      w.bq = read("bq", l);
      w.bk = read("bk", l);
      w.bv = read("bv", l);
    }
    w.wo = read("wo", l);
    w.ffn_norm = read("ffn_norm", l);
    w.w1 = read("w1", l);
    w.w2 = read("w2", l);
    w.w3 = read("w3", l);
  }
  m.final_norm = read("final_norm", -1);
  if (!c.tied_classifier) m.classifier = read("classifier", -1);
  m.validate();
  return m;
}

Model load_gguf(const std::string& path) {
  const MappedFile file(path);
  return load_gguf_from_memory(file.data(), file.size(), path);
}

Model load_gguf_from_memory(const uint8_t* data, size_t size, const std::string& name) {
  return model_from_gguf(parse_gguf(data, size, name));
}

}  // namespace nanoserve
