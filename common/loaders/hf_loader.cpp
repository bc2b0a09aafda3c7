#include "common/loaders/hf_loader.h"

#include <cfloat>
#include <climits>
#include <cstdio>
#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sys/mman.h>
#include <unistd.h>

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

/// The family of a config.json: model_type when present, else the architectures list.
std::string hf_architecture(const json& cfg, const std::string& file) {
  static const std::pair<const char*, const char*> kFamilies[] = {
      {"llama", "LlamaForCausalLM"}, {"qwen2", "Qwen2ForCausalLM"},
      {"mistral", "MistralForCausalLM"}};
  if (cfg.contains("model_type")) {
    for (const auto& [type, cls] : kFamilies) {
      if (cfg["model_type"] == type) return type;
    }
  } else if (cfg.contains("architectures") && cfg["architectures"].is_array()) {
    for (const json& a : cfg["architectures"]) {
      for (const auto& [type, cls] : kFamilies) {
        if (a == cls) return type;
      }
    }
  }
  throw LoadError(file, "model_type",
                  (cfg.contains("model_type") ? cfg["model_type"].dump() : std::string("absent")) +
                      ": supported are \"llama\" (LlamaForCausalLM), \"qwen2\" "
                      "(Qwen2ForCausalLM) and \"mistral\" (MistralForCausalLM)");
}

void check_supported(const json& cfg, const std::string& file, const std::string& arch) {
  if (cfg.contains("hidden_act") && cfg["hidden_act"] != "silu") {
    throw LoadError(file, "hidden_act",
                    cfg["hidden_act"].dump() + " is not supported (only \"silu\")");
  }
  // Llama's attention_bias puts a bias on o_proj too, which no path implements; Qwen2's q/k/v
  // biases are implied by the architecture and have no key.
  const char* biases[] = {"attention_bias", "mlp_bias"};
  for (const char* bias : biases) {
    if (cfg.contains(bias) && cfg[bias] == true) {
      throw LoadError(file, bias,
                      "true is not supported for " + arch +
                          " (only Qwen2's q/k/v biases are; o_proj and MLP biases are not)");
    }
  }
  if (arch == "qwen2" && cfg.contains("use_sliding_window") && cfg["use_sliding_window"] == true) {
    throw LoadError(file, "use_sliding_window", "true is not supported (sliding-window attention)");
  }
}

/// A number of `rope_scaling`, required and positive.
float scaling_number(const json& rs, const std::string& file, const char* key) {
  const std::string field = std::string("rope_scaling.") + key;
  if (!rs.contains(key) || rs[key].is_null()) throw LoadError(file, field, "is missing");
  const json& v = rs[key];
  if (!v.is_number() || !(v.get<double>() > 0.0) || v.get<double>() > double(FLT_MAX)) {
    throw LoadError(file, field, v.dump() + " is not a positive finite number");
  }
  return float(v.get<double>());
}

RopeScaling parse_rope_scaling(const json& cfg, const std::string& file) {
  RopeScaling out;
  if (!cfg.contains("rope_scaling") || cfg["rope_scaling"].is_null()) return out;
  const json& rs = cfg["rope_scaling"];
  if (!rs.is_object()) throw LoadError(file, "rope_scaling", rs.dump() + " is not an object");
  // transformers reads "rope_type", and the older "type" when it is absent.
  const char* type_key = rs.contains("rope_type") ? "rope_type" : "type";
  if (!rs.contains(type_key) || !rs[type_key].is_string()) {
    throw LoadError(file, "rope_scaling.rope_type", "is missing or not a string");
  }
  const std::string type = rs[type_key].get<std::string>();
  if (type == "default") return out;
  if (type == "linear") {
    out.type = RopeScalingType::kLinear;
    out.factor = scaling_number(rs, file, "factor");
    return out;
  }
  if (type == "llama3") {
    out.type = RopeScalingType::kLlama3;
    out.factor = scaling_number(rs, file, "factor");
    out.low_freq_factor = scaling_number(rs, file, "low_freq_factor");
    out.high_freq_factor = scaling_number(rs, file, "high_freq_factor");
    out.original_max_position_embeddings =
        get_int(rs, file, "original_max_position_embeddings", std::nullopt, 1,
                ConfigLimits::kMaxSeqLen);
    if (!(out.high_freq_factor > out.low_freq_factor)) {
      throw LoadError(file, "rope_scaling.high_freq_factor",
                      rs["high_freq_factor"].dump() + " must exceed low_freq_factor " +
                          rs["low_freq_factor"].dump());
    }
    return out;
  }
  throw LoadError(file, "rope_scaling.rope_type",
                  "\"" + type + "\" is not supported (supported: default, linear, llama3)");
}

/// One stored tensor of a checkpoint: the parsed file it lives in and its entry.
struct StoredTensor {
  const SafetensorsFile* file = nullptr;
  const SafetensorsTensor* tensor = nullptr;
};

/// The tensors of a checkpoint's safetensors files (one, or every shard) by name, read into
/// fp32 one at a time; `__metadata__` aliases resolved within each file.
class TensorSource {
 public:
  explicit TensorSource(const std::vector<SafetensorsFile>& files) : files_(files) {
    for (const SafetensorsFile& f : files_) {
      for (const SafetensorsTensor& t : f.tensors) {
        const auto [it, fresh] = by_name_.emplace(t.name, StoredTensor{&f, &t});
        if (!fresh) {
          throw LoadError(f.name, t.name, "is stored twice: also in " + it->second.file->name);
        }
      }
    }
  }

  /// The tensor stored as `name`, or under the name a file's `__metadata__[name]` gives it.
  StoredTensor resolve(const std::string& name) const {
    if (const auto it = by_name_.find(name); it != by_name_.end()) return it->second;
    for (const SafetensorsFile& f : files_) {
      const auto alias = f.metadata.find(name);
      if (alias == f.metadata.end()) continue;
      if (const SafetensorsTensor* t = f.find(alias->second)) return {&f, t};
    }
    return {};
  }
  std::vector<float> read(const std::string& name, const std::vector<uint64_t>& shape) const {
    const StoredTensor t = resolve(name);
    if (t.tensor == nullptr) throw LoadError(where(), name, "tensor is missing");
    return read(t, name, shape);
  }
  std::vector<float> read(const StoredTensor& st, const std::string& name,
                          const std::vector<uint64_t>& shape, uint64_t offset = 0,
                          uint64_t count = UINT64_MAX) const {
    const SafetensorsTensor& t = *st.tensor;
    if (t.shape != shape) {
      throw LoadError(st.file->name, name,
                      "has shape " + json(t.shape).dump() + ", expected " + json(shape).dump());
    }
    if (t.dtype->decode == nullptr) {
      throw LoadError(
          st.file->name, name,
          std::string("dtype ") + t.dtype->name + " is not supported (supported: F32, F16, BF16)");
    }
    if (offset > t.n_elements) offset = t.n_elements;
    count = std::min(count, t.n_elements - offset);
    return decode_tensor(t.dtype->decode, st.file->tensor_data(t) + offset * t.dtype->element_size, count,
                         st.file->name, name);
  }
  /// The file named in a "tensor is missing" error: the only file, or the first shard.
  std::string where() const { return files_.size() == 1 ? files_[0].name : files_[0].name + " (and the other shards)"; }

 private:
  const std::vector<SafetensorsFile>& files_;
  std::map<std::string, StoredTensor> by_name_;
};

/// The HF tensor behind Model field `field` of `layer` (-1: model-wide), decoded to fp32 with
/// its shape checked; `used` receives where it was stored.
std::vector<float> read_field(const TensorSource& src, const ModelConfig& c,
                              const std::string& field, int layer, StoredTensor* used = nullptr,
                              uint64_t offset = 0, uint64_t count = UINT64_MAX) {
  const uint64_t d = c.dim, h = c.hidden_dim, q = c.q_dim(), kv = c.kv_dim(), v = c.vocab_size;
  auto read = [&](const std::string& name, const std::vector<uint64_t>& shape) {
    const StoredTensor t = src.resolve(name);
    if (t.tensor == nullptr) throw LoadError(src.where(), name, "tensor is missing");
    if (used) *used = t;
    return src.read(t, name, shape, offset, count);
  };
  if (field == "token_embedding") {
    const std::string embed = "model.embed_tokens.weight";
    StoredTensor embedding = src.resolve(embed);
    if (embedding.tensor == nullptr && c.tied_classifier) embedding = src.resolve("lm_head.weight");
    if (embedding.tensor == nullptr) throw LoadError(src.where(), embed, "tensor is missing");
    if (used) *used = embedding;
    return src.read(embedding, embed, {v, d}, offset, count);
  }
  if (field == "final_norm") return read("model.norm.weight", {d});
  if (field == "classifier") return read("lm_head.weight", {v, d});
  const std::string p = "model.layers." + std::to_string(layer) + ".";
  if (field == "attn_norm") return read(p + "input_layernorm.weight", {d});
  if (field == "wq") return read(p + "self_attn.q_proj.weight", {q, d});
  if (field == "wk") return read(p + "self_attn.k_proj.weight", {kv, d});
  if (field == "wv") return read(p + "self_attn.v_proj.weight", {kv, d});
  if (field == "bq") return read(p + "self_attn.q_proj.bias", {q});
  if (field == "bk") return read(p + "self_attn.k_proj.bias", {kv});
  if (field == "bv") return read(p + "self_attn.v_proj.bias", {kv});
  if (field == "wo") return read(p + "self_attn.o_proj.weight", {d, q});
  if (field == "ffn_norm") return read(p + "post_attention_layernorm.weight", {d});
  if (field == "w1") return read(p + "mlp.gate_proj.weight", {h, d});
  if (field == "w2") return read(p + "mlp.down_proj.weight", {d, h});
  if (field == "w3") return read(p + "mlp.up_proj.weight", {h, d});
  throw InvalidArgument("hf_loader: no Model field '" + field + "'");
}

/// Builds the Model of `config_json` from the tensors of `files`.
Model build_model(const std::string& config_json, const std::vector<SafetensorsFile>& files,
                  const std::string& name) {
  Model m;
  m.source = name;
  m.config = parse_hf_config(config_json, name + "/config.json");
  m.config.name = name;
  const ModelConfig& c = m.config;
  const TensorSource src(files);
  m.token_embedding = read_field(src, c, "token_embedding", -1);
  m.layers.resize(c.n_layers);
  for (int l = 0; l < c.n_layers; ++l) {
    LayerWeights& w = m.layers[l];
    w.attn_norm = read_field(src, c, "attn_norm", l);
    w.wq = read_field(src, c, "wq", l);
    w.wk = read_field(src, c, "wk", l);
    w.wv = read_field(src, c, "wv", l);
    if (c.attention_bias) {
      w.bq = read_field(src, c, "bq", l);
      w.bk = read_field(src, c, "bk", l);
      w.bv = read_field(src, c, "bv", l);
    }
    w.wo = read_field(src, c, "wo", l);
    w.ffn_norm = read_field(src, c, "ffn_norm", l);
    w.w1 = read_field(src, c, "w1", l);
    w.w2 = read_field(src, c, "w2", l);
    w.w3 = read_field(src, c, "w3", l);
  }
  m.final_norm = read_field(src, c, "final_norm", -1);
  // A tied model ignores any stored lm_head.weight, as transformers does when it ties them.
  if (!c.tied_classifier) m.classifier = read_field(src, c, "classifier", -1);
  m.validate();
  return m;
}

/// A shard file name of an index: a plain file name inside the checkpoint's directory.
void check_shard_name(const std::string& shard, const std::string& index_file,
                      const std::string& tensor) {
  if (shard.empty() || shard == "." || shard == ".." || shard.find('/') != std::string::npos ||
      shard.find('\\') != std::string::npos || shard.find('\0') != std::string::npos) {
    throw LoadError(index_file, "weight_map." + tensor,
                    json(shard).dump() + " is not a file name inside the checkpoint directory");
  }
}

// A config.json is a few kilobytes; the limit only stops a huge file before it is read.
constexpr uint64_t kMaxConfigJsonBytes = 1 << 20;
// An index lists every tensor once (Llama-3.1-405B: ~2,000 entries, ~150 KB).
constexpr uint64_t kMaxIndexJsonBytes = 64 << 20;

}  // namespace

ModelConfig parse_hf_config(const std::string& json_text, const std::string& file) {
  const json cfg = parse_json_text(json_text, file);
  if (!cfg.is_object()) throw LoadError(file, "json", "is not a JSON object");
  const std::string arch = hf_architecture(cfg, file);
  check_supported(cfg, file, arch);
  ModelConfig c;
  c.name = file;
  c.architecture = arch;
  c.attention_bias = arch == "qwen2";
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
  c.rope_scaling = parse_rope_scaling(cfg, file);
  // Mistral-7B-v0.1 attends within a 4096-token sliding window. Up to the window that is plain
  // causal attention, so the model is exact there; the context is limited to the window rather
  // than computed wrongly beyond it.
  if (arch == "mistral" && cfg.contains("sliding_window") && !cfg["sliding_window"].is_null()) {
    const int window = get_int(cfg, file, "sliding_window", std::nullopt, 1, L::kMaxSeqLen);
    if (window < c.max_seq_len) c.max_seq_len = window;
  }
  c.validate(file);
  return c;
}


Model load_hf_from_memory(const std::string& config_json, const uint8_t* safetensors,
                          size_t safetensors_size, const std::string& name) {
  std::vector<SafetensorsFile> files;
  // Parse the config first, so a bad config is reported before the weights.
  parse_hf_config(config_json, name + "/config.json");
  files.push_back(parse_safetensors(safetensors, safetensors_size, name + "/model.safetensors"));
  return build_model(config_json, files, name);
}

std::vector<std::string> hf_index_shards(const std::string& index_json, const std::string& file) {
  const json index = parse_json_text(index_json, file);
  if (!index.is_object()) throw LoadError(file, "json", "is not a JSON object");
  if (!index.contains("weight_map") || !index["weight_map"].is_object()) {
    throw LoadError(file, "weight_map", "is missing or not an object");
  }
  if (index["weight_map"].empty()) throw LoadError(file, "weight_map", "is empty");
  std::vector<std::string> shards;
  for (const auto& [tensor, shard] : index["weight_map"].items()) {
    if (!shard.is_string()) throw LoadError(file, "weight_map." + tensor, "is not a string");
    check_shard_name(shard.get<std::string>(), file, tensor);
    if (std::find(shards.begin(), shards.end(), shard.get<std::string>()) == shards.end()) {
      shards.push_back(shard.get<std::string>());
    }
  }
  return shards;
}

namespace {

/// The parsed shards of a sharded checkpoint, after every consistency check of the index.
std::vector<SafetensorsFile> sharded_files(const std::string& config_json,
                                           const std::string& index_json,
                                           const std::vector<HfShard>& shards,
                                           const std::string& name) {
  const std::string index_file = name + "/model.safetensors.index.json";
  parse_hf_config(config_json, name + "/config.json");
  const std::vector<std::string> wanted = hf_index_shards(index_json, index_file);
  std::vector<SafetensorsFile> files;
  files.reserve(shards.size());
  for (const std::string& w : wanted) {
    const auto it = std::find_if(shards.begin(), shards.end(),
                                 [&](const HfShard& s) { return s.file == w; });
    if (it == shards.end()) {
      throw LoadError(index_file, "weight_map", "names shard " + w + ", which is not in " + name);
    }
    files.push_back(parse_safetensors(it->data, it->size, name + "/" + w));
  }
  // No tensor stored twice, every stored tensor indexed in the shard that holds it, and every
  // tensor of the index in the shard it names.
  std::map<std::string, std::string> stored;  // tensor -> shard file
  for (const SafetensorsFile& f : files) {
    for (const SafetensorsTensor& t : f.tensors) {
      const auto [it, fresh] = stored.emplace(t.name, f.name);
      if (!fresh) throw LoadError(f.name, t.name, "is stored twice: also in " + it->second);
    }
  }
  const json map = parse_json_text(index_json, index_file)["weight_map"];
  for (const SafetensorsFile& f : files) {
    const std::string shard = f.name.substr(name.size() + 1);
    for (const SafetensorsTensor& t : f.tensors) {
      if (!map.contains(t.name)) {
        throw LoadError(f.name, t.name, "is stored but not listed in the index's weight_map");
      }
      if (map[t.name] != shard) {
        throw LoadError(f.name, t.name,
                        "is stored here, but the index places it in " + map[t.name].dump());
      }
    }
  }
  for (const auto& [tensor, shard] : map.items()) {
    // A named copy: C++17 lambdas cannot capture a structured binding (clang refuses it).
    const std::string shard_name = shard.get<std::string>();
    const auto f = std::find_if(files.begin(), files.end(), [&](const SafetensorsFile& sf) {
      return sf.name == name + "/" + shard_name;
    });
    if (f->find(tensor) == nullptr) {
      throw LoadError(index_file, "weight_map." + tensor,
                      "names shard " + shard_name + ", which does not contain it");
    }
  }
  return files;
}

}  // namespace

Model load_hf_sharded_from_memory(const std::string& config_json, const std::string& index_json,
                                  const std::vector<HfShard>& shards, const std::string& name) {
  return build_model(config_json, sharded_files(config_json, index_json, shards, name), name);
}

/// The mapped files and parsed safetensors of a checkpoint directory (one file, or every
/// shard its index names, checked as `load_hf_sharded_from_memory` checks them).
struct HfCheckpointReader::Impl {
  std::string config_text;
  std::vector<MappedFile> mapped;
  std::vector<SafetensorsFile> files;
  ModelConfig config;
  std::unique_ptr<TensorSource> src;

  explicit Impl(const std::string& dir) {
    namespace fs = std::filesystem;
    const std::string config_path = (fs::path(dir) / "config.json").string();
    const std::string weights_path = (fs::path(dir) / "model.safetensors").string();
    const std::string index_path = (fs::path(dir) / "model.safetensors.index.json").string();
    std::error_code ec;
    config_text = read_input_file(config_path, "config.json", kMaxConfigJsonBytes);
    config = parse_hf_config(config_text, dir + "/config.json");
    config.name = dir;
    if (fs::exists(weights_path, ec) || !fs::exists(index_path, ec)) {
      mapped.emplace_back(weights_path);
      files.push_back(parse_safetensors(mapped[0].data(), mapped[0].size(), dir + "/model.safetensors"));
    } else {
      // Sharded: map every shard the index names (each once).
      const std::string index_text =
          read_input_file(index_path, "model.safetensors.index.json", kMaxIndexJsonBytes);
      const std::vector<std::string> names = hf_index_shards(index_text, index_path);
      std::vector<HfShard> shards;
      mapped.reserve(names.size());
      for (const std::string& shard : names) {
        const std::string path = (fs::path(dir) / shard).string();
        if (!fs::exists(path, ec)) {
          throw LoadError(index_path, "weight_map",
                          "names shard " + shard + ", which is not in " + dir);
        }
        mapped.emplace_back(path);
        shards.push_back({shard, mapped.back().data(), mapped.back().size()});
      }
      files = sharded_files(config_text, index_text, shards, dir);
    }
    src = std::make_unique<TensorSource>(files);
  }
};

HfCheckpointReader::HfCheckpointReader(const std::string& dir)
    : impl_(std::make_unique<Impl>(dir)) {}
HfCheckpointReader::~HfCheckpointReader() = default;

const ModelConfig& HfCheckpointReader::config() const { return impl_->config; }

std::vector<float> HfCheckpointReader::read(const std::string& field, int layer) const {
  return read(field, layer, 0, SIZE_MAX);
}

std::vector<float> HfCheckpointReader::read(const std::string& field, int layer,
                                            std::size_t offset, std::size_t count) const {
  StoredTensor used;
  std::vector<float> values =
      read_field(*impl_->src, impl_->config, field, layer, &used, offset, count);
  // The mapped pages just read are not needed again: drop them from this process (they stay
  // in the page cache), so that resident memory holds one range, not the whole file.
  if (used.tensor != nullptr) {
    const long page = sysconf(_SC_PAGESIZE);
    const uint64_t element = used.tensor->dtype->element_size;
    const uintptr_t from =
        reinterpret_cast<uintptr_t>(used.file->tensor_data(*used.tensor)) + offset * element;
    const uintptr_t to = from + values.size() * element;
    const uintptr_t start = from / uintptr_t(page) * uintptr_t(page);
    if (to > start) madvise(reinterpret_cast<void*>(start), to - start, MADV_DONTNEED);
  }
  return values;
}

Model HfCheckpointReader::model() const {
  Model m = build_model(impl_->config_text, impl_->files, impl_->config.name);
  return m;
}

Model load_hf_model(const std::string& dir) { return HfCheckpointReader(dir).model(); }

namespace {

json rope_scaling_json(const RopeScaling& rs) {
  if (!rs.freq_factors.empty()) {
    throw InvalidArgument("save_hf: per-pair RoPE frequency factors (a GGUF rope_freqs.weight) "
                          "have no config.json form");
  }
  switch (rs.type) {
    case RopeScalingType::kNone: return nullptr;
    case RopeScalingType::kLinear: return {{"rope_type", "linear"}, {"factor", rs.factor}};
    case RopeScalingType::kLlama3:
      return {{"rope_type", "llama3"},
              {"factor", rs.factor},
              {"low_freq_factor", rs.low_freq_factor},
              {"high_freq_factor", rs.high_freq_factor},
              {"original_max_position_embeddings", rs.original_max_position_embeddings}};
  }
  return nullptr;
}

/// The tensors of `model` in the order transformers' save_pretrained writes them, encoded.
std::vector<SafetensorsEntry> hf_entries(const Model& model, const std::string& dtype) {
  const ModelConfig& c = model.config;
  if (c.rope_style != RopeStyle::kRotateHalf) {
    throw InvalidArgument(
        "save_hf: " + model.source +
        " uses adjacent-pair RoPE; Hugging Face Llama weights expect rotate-half");
  }
  if (c.architecture != "llama" && c.architecture != "qwen2" && c.architecture != "mistral") {
    throw InvalidArgument("save_hf: architecture '" + c.architecture + "' has no HF form");
  }
  if (c.attention_bias != (c.architecture == "qwen2")) {
    throw InvalidArgument("save_hf: q/k/v biases exist exactly for qwen2, not for " +
                          c.architecture);
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
    if (c.attention_bias) {
      add(p + "self_attn.q_proj.bias", {q}, w.bq);
      add(p + "self_attn.k_proj.bias", {kv}, w.bk);
      add(p + "self_attn.v_proj.bias", {kv}, w.bv);
    }
    add(p + "self_attn.o_proj.weight", {d, q}, w.wo);
    add(p + "post_attention_layernorm.weight", {d}, w.ffn_norm);
    add(p + "mlp.gate_proj.weight", {h, d}, w.w1);
    add(p + "mlp.down_proj.weight", {d, h}, w.w2);
    add(p + "mlp.up_proj.weight", {h, d}, w.w3);
  }
  add("model.norm.weight", {d}, model.final_norm);
  if (!c.tied_classifier) add("lm_head.weight", {v, d}, model.classifier);
  return entries;
}

}  // namespace

std::string hf_config_json(const ModelConfig& c, const std::string& dtype) {
  const char* cls = c.architecture == "qwen2"     ? "Qwen2ForCausalLM"
                    : c.architecture == "mistral" ? "MistralForCausalLM"
                                                  : "LlamaForCausalLM";
  json config = {{"architectures", {cls}},
                 {"model_type", c.architecture},
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
                 {"rope_scaling", rope_scaling_json(c.rope_scaling)},
                 {"tie_word_embeddings", c.tied_classifier},
                 {"torch_dtype", dtype == "F32"   ? "float32"
                                 : dtype == "F16" ? "float16"
                                                  : "bfloat16"}};
  if (c.architecture == "llama") config["attention_bias"] = false;
  if (c.architecture == "qwen2") config["use_sliding_window"] = false;
  if (c.architecture == "mistral") config["sliding_window"] = nullptr;
  return config.dump(2);
}

HfCheckpoint save_hf(const Model& model, const std::string& dtype) {
  std::vector<SafetensorsEntry> entries = hf_entries(model, dtype);
  return {hf_config_json(model.config, dtype), save_safetensors(entries, {{"format", "pt"}})};
}

HfShardedCheckpoint save_hf_sharded(const Model& model, const std::string& dtype, int n_shards) {
  std::vector<SafetensorsEntry> entries = hf_entries(model, dtype);
  if (n_shards < 1 || size_t(n_shards) > entries.size()) {
    throw InvalidArgument("save_hf_sharded: " + std::to_string(n_shards) + " shards for " +
                          std::to_string(entries.size()) + " tensors");
  }
  uint64_t total = 0;
  for (const SafetensorsEntry& e : entries) total += e.bytes.size();
  HfShardedCheckpoint out;
  out.config_json = hf_config_json(model.config, dtype);
  json weight_map = json::object();
  // Consecutive tensors fill each shard up to ~total / n_shards bytes (what save_pretrained's
  // max_shard_size does), each shard keeping at least one tensor.
  size_t next = 0;
  for (int s = 0; s < n_shards; ++s) {
    char file[64];
    std::snprintf(file, sizeof(file), "model-%05d-of-%05d.safetensors", s + 1, n_shards);
    std::vector<SafetensorsEntry> part;
    uint64_t bytes = 0;
    const size_t must_leave = size_t(n_shards - s - 1);
    while (next < entries.size() - must_leave &&
           (part.empty() || s == n_shards - 1 || bytes + entries[next].bytes.size() <=
                                                     (total + n_shards - 1) / n_shards)) {
      bytes += entries[next].bytes.size();
      weight_map[entries[next].name] = file;
      part.push_back(std::move(entries[next++]));
    }
    out.shards.push_back({file, save_safetensors(part, {{"format", "pt"}})});
  }
  out.index_json = json{{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}}.dump(2);
  return out;
}

}  // namespace nanoserve
