#include "common/loaders/hf_loader.h"

#include <cfloat>
#include <climits>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

#include "common/error.h"
#include "common/io/input_file.h"
#include "common/io/json_text.h"
#include "common/loaders/mapped_file.h"
#include "common/loaders/safetensors_file.h"
#include "common/loaders/tensor_decode.h"

namespace nanoserve {

namespace {

using nlohmann::json;

/// An integer key in [lo, hi] (ConfigLimits), checked as it is read, before anything is
/// derived from it.
int get_int(const json& cfg, const std::string& file, const char* key,
            std::optional<int> fallback, int64_t lo = 0, int64_t hi = INT_MAX) {
  if (!cfg.contains(key) || cfg[key].is_null()) {
    if (fallback) return *fallback;
    throw LoadError(file, key, "is missing");
  }
  const json& v = cfg[key];
  if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT_MAX))) {
    throw LoadError(file, key, v.dump() + " is not an integer in [" + std::to_string(lo) + ", " +
                                   std::to_string(hi) + "]");
  }
  check_config_field(file, key, v.get<int64_t>(), lo, hi);
  return v.get<int>();
}

float get_positive_float(const json& cfg, const std::string& file, const char* key,
                         float fallback) {
  if (!cfg.contains(key) || cfg[key].is_null()) return fallback;
  const json& v = cfg[key];
  if (!v.is_number() || !(v.get<double>() > 0.0) || v.get<double>() > double(FLT_MAX)) {
    throw LoadError(file, key, v.dump() + " is not a positive finite number");
  }
  return float(v.get<double>());
}

void check_llama_family(const json& cfg, const std::string& file) {
  const bool type_ok = cfg.contains("model_type") && cfg["model_type"] == "llama";
  bool arch_ok = false;
  if (cfg.contains("architectures") && cfg["architectures"].is_array()) {
    for (const json& a : cfg["architectures"]) arch_ok = arch_ok || a == "LlamaForCausalLM";
  }
  if (!type_ok && !arch_ok) {
    throw LoadError(
        file, "model_type",
        (cfg.contains("model_type") ? cfg["model_type"].dump() : std::string("absent")) +
            ": only Llama models (model_type \"llama\" / LlamaForCausalLM) are supported");
  }
  if (cfg.contains("hidden_act") && cfg["hidden_act"] != "silu") {
    throw LoadError(file, "hidden_act",
                    cfg["hidden_act"].dump() + " is not supported (only \"silu\")");
  }
  if (cfg.contains("rope_scaling") && !cfg["rope_scaling"].is_null()) {
    throw LoadError(file, "rope_scaling",
                    cfg["rope_scaling"].dump() + " is not implemented (only plain RoPE)");
  }
  for (const char* bias : {"attention_bias", "mlp_bias"}) {
    if (cfg.contains(bias) && cfg[bias] == true) {
      throw LoadError(file, bias, "true is not supported (Llama layers have no biases)");
    }
  }
}

/// Reads tensors of one safetensors file into fp32, resolving `__metadata__` aliases.
class TensorSource {
 public:
  explicit TensorSource(const SafetensorsFile& f) : f_(f) {}

  /// The tensor stored as `name`, or under the name `__metadata__[name]` aliases it to.
  const SafetensorsTensor* resolve(const std::string& name) const {
    if (const SafetensorsTensor* t = f_.find(name)) return t;
    const auto alias = f_.metadata.find(name);
    return alias == f_.metadata.end() ? nullptr : f_.find(alias->second);
  }
  std::vector<float> read(const std::string& name, const std::vector<uint64_t>& shape) const {
    const SafetensorsTensor* t = resolve(name);
    if (t == nullptr) throw LoadError(f_.name, name, "tensor is missing");
    return read(*t, name, shape);
  }
  std::vector<float> read(const SafetensorsTensor& t, const std::string& name,
                          const std::vector<uint64_t>& shape) const {
    if (t.shape != shape) {
      throw LoadError(f_.name, name,
                      "has shape " + json(t.shape).dump() + ", expected " + json(shape).dump());
    }
    if (t.dtype->decode == nullptr) {
      throw LoadError(
          f_.name, name,
          std::string("dtype ") + t.dtype->name + " is not supported (supported: F32, F16, BF16)");
    }
    return decode_tensor(t.dtype->decode, f_.tensor_data(t), t.n_elements, f_.name, name);
  }

 private:
  const SafetensorsFile& f_;
};

// A config.json is a few kilobytes; the limit only stops a huge file before it is read.
constexpr uint64_t kMaxConfigJsonBytes = 1 << 20;

}  // namespace

ModelConfig parse_hf_config(const std::string& json_text, const std::string& file) {
  const json cfg = parse_json_text(json_text, file);
  if (!cfg.is_object()) throw LoadError(file, "json", "is not a JSON object");
  check_llama_family(cfg, file);
  ModelConfig c;
  c.name = file;
  using L = ConfigLimits;
  c.dim = get_int(cfg, file, "hidden_size", std::nullopt, 1, L::kMaxDim);
  c.hidden_dim = get_int(cfg, file, "intermediate_size", std::nullopt, 1, L::kMaxHiddenDim);
  c.n_layers = get_int(cfg, file, "num_hidden_layers", std::nullopt, 1, L::kMaxLayers);
  c.n_heads = get_int(cfg, file, "num_attention_heads", std::nullopt, 1, L::kMaxHeads);
  c.n_kv_heads = get_int(cfg, file, "num_key_value_heads", c.n_heads, 1, c.n_heads);
  if (c.n_heads == 0) throw LoadError(file, "num_attention_heads", "is 0");
  if (!cfg.contains("head_dim") && c.dim % c.n_heads != 0) {
    throw LoadError(file, "num_attention_heads",
                    std::to_string(c.n_heads) + " does not divide hidden_size=" +
                        std::to_string(c.dim) + " and head_dim is absent");
  }
  c.head_dim = get_int(cfg, file, "head_dim", c.dim / c.n_heads, 2, L::kMaxHeadDim);
  c.vocab_size = get_int(cfg, file, "vocab_size", std::nullopt, 1, L::kMaxVocab);
  c.max_seq_len = get_int(cfg, file, "max_position_embeddings", std::nullopt, 1, L::kMaxSeqLen);
  c.rope_theta = get_positive_float(cfg, file, "rope_theta", 10000.0f);
  c.rope_style = RopeStyle::kRotateHalf;
  c.norm_eps = get_positive_float(cfg, file, "rms_norm_eps", 1e-6f);
  if (cfg.contains("tie_word_embeddings") && !cfg["tie_word_embeddings"].is_boolean()) {
    throw LoadError(file, "tie_word_embeddings", "is not a boolean");
  }
  c.tied_classifier = cfg.value("tie_word_embeddings", false);
  c.validate(file);
  return c;
}

Model load_hf_model(const std::string& dir) {
  namespace fs = std::filesystem;
  const std::string config_path = (fs::path(dir) / "config.json").string();
  const std::string weights_path = (fs::path(dir) / "model.safetensors").string();
  std::error_code ec;
  if (!fs::exists(weights_path, ec) &&
      fs::exists(fs::path(dir) / "model.safetensors.index.json", ec)) {
    throw LoadError(
        weights_path, "file",
        "missing; sharded checkpoints (model.safetensors.index.json) are not supported");
  }
  const std::string config_text = read_input_file(config_path, "config.json", kMaxConfigJsonBytes);
  const MappedFile weights(weights_path);
  return load_hf_from_memory(config_text, weights.data(), weights.size(), dir);
}

Model load_hf_from_memory(const std::string& config_json, const uint8_t* safetensors,
                          size_t safetensors_size, const std::string& name) {
  const std::string config_file = name + "/config.json";
  const std::string weights_file = name + "/model.safetensors";
  Model m;
  m.source = name;
  m.config = parse_hf_config(config_json, config_file);
  m.config.name = name;
  const ModelConfig& c = m.config;
  const SafetensorsFile st = parse_safetensors(safetensors, safetensors_size, weights_file);
  const TensorSource src(st);
  const uint64_t d = c.dim, h = c.hidden_dim, q = c.q_dim(), kv = c.kv_dim(), v = c.vocab_size;

  const std::string embed = "model.embed_tokens.weight";
  const SafetensorsTensor* embedding = src.resolve(embed);
  if (embedding == nullptr && c.tied_classifier) embedding = src.resolve("lm_head.weight");
  if (embedding == nullptr) throw LoadError(weights_file, embed, "tensor is missing");
  m.token_embedding = src.read(*embedding, embed, {v, d});
  m.layers.resize(c.n_layers);
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    LayerWeights& w = m.layers[l];
    w.attn_norm = src.read(p + "input_layernorm.weight", {d});
    w.wq = src.read(p + "self_attn.q_proj.weight", {q, d});
    w.wk = src.read(p + "self_attn.k_proj.weight", {kv, d});
    w.wv = src.read(p + "self_attn.v_proj.weight", {kv, d});
    w.wo = src.read(p + "self_attn.o_proj.weight", {d, q});
    w.ffn_norm = src.read(p + "post_attention_layernorm.weight", {d});
    w.w1 = src.read(p + "mlp.gate_proj.weight", {h, d});
    w.w2 = src.read(p + "mlp.down_proj.weight", {d, h});
    w.w3 = src.read(p + "mlp.up_proj.weight", {h, d});
  }
  m.final_norm = src.read("model.norm.weight", {d});
  // A tied model ignores any stored lm_head.weight, as transformers does when it ties them.
  if (!c.tied_classifier) m.classifier = src.read("lm_head.weight", {v, d});
  m.validate();
  return m;
}

HfCheckpoint save_hf(const Model& model, const std::string& dtype) {
  const ModelConfig& c = model.config;
  if (c.rope_style != RopeStyle::kRotateHalf) {
    throw InvalidArgument(
        "save_hf: " + model.source +
        " uses adjacent-pair RoPE; Hugging Face Llama weights expect rotate-half");
  }
  std::vector<uint8_t> (*encode)(const std::vector<float>&) = dtype == "F32"    ? encode_f32
                                                              : dtype == "F16"  ? encode_f16
                                                              : dtype == "BF16" ? encode_bf16
                                                                                : nullptr;
  if (encode == nullptr)
    throw InvalidArgument("save_hf: dtype '" + dtype + "' is not F32, F16 or BF16");
  const uint64_t d = c.dim, h = c.hidden_dim, q = c.q_dim(), kv = c.kv_dim(), v = c.vocab_size;
  std::vector<SafetensorsEntry> entries;
  auto add = [&](const std::string& name, std::vector<uint64_t> shape,
                 const std::vector<float>& t) {
    entries.push_back({name, dtype, std::move(shape), encode(t)});
  };
  add("model.embed_tokens.weight", {v, d}, model.token_embedding);
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    const LayerWeights& w = model.layers[l];
    add(p + "input_layernorm.weight", {d}, w.attn_norm);
    add(p + "self_attn.q_proj.weight", {q, d}, w.wq);
    add(p + "self_attn.k_proj.weight", {kv, d}, w.wk);
    add(p + "self_attn.v_proj.weight", {kv, d}, w.wv);
    add(p + "self_attn.o_proj.weight", {d, q}, w.wo);
    add(p + "post_attention_layernorm.weight", {d}, w.ffn_norm);
    add(p + "mlp.gate_proj.weight", {h, d}, w.w1);
    add(p + "mlp.down_proj.weight", {d, h}, w.w2);
    add(p + "mlp.up_proj.weight", {h, d}, w.w3);
  }
  add("model.norm.weight", {d}, model.final_norm);
  if (!c.tied_classifier) add("lm_head.weight", {v, d}, model.classifier);
  const json config = {{"architectures", {"LlamaForCausalLM"}},
                       {"model_type", "llama"},
                       {"hidden_act", "silu"},
                       {"hidden_size", c.dim},
                       {"intermediate_size", c.hidden_dim},
                       {"num_hidden_layers", c.n_layers},
                       {"num_attention_heads", c.n_heads},
                       {"num_key_value_heads", c.n_kv_heads},
                       {"head_dim", c.head_dim},
                       {"vocab_size", c.vocab_size},
                       {"max_position_embeddings", c.max_seq_len},
                       {"rope_theta", c.rope_theta},
                       {"rms_norm_eps", c.norm_eps},
                       {"rope_scaling", nullptr},
                       {"tie_word_embeddings", c.tied_classifier},
                       {"torch_dtype", dtype == "F32"   ? "float32"
                                       : dtype == "F16" ? "float16"
                                                        : "bfloat16"}};
  return {config.dump(2), save_safetensors(entries, {{"format", "pt"}})};
}

}  // namespace nanoserve
