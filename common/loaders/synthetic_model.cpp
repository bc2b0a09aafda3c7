#include "common/loaders/synthetic_model.h"

#include <algorithm>
#include <cmath>
#include <thread>

#include "common/error.h"

namespace nanoserve {

namespace {

struct SyntheticShape {
  const char* name;
  int dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, max_seq_len;
  float rope_theta;
};

// Published shapes: Llama 2 (Touvron et al. 2023, Table 1 and the released params.json files;
// GQA with 8 KV heads only for 70B) and Llama 3 (Meta's model cards: GQA 8 KV heads, 128256
// tokens, rope theta 500000).
constexpr SyntheticShape kShapes[] = {
    {"tiny", 64, 176, 4, 8, 4, 512, 256, 1e4f},
    {"small", 256, 688, 6, 8, 2, 4096, 1024, 1e4f},
    {"llama2-7b", 4096, 11008, 32, 32, 32, 32000, 4096, 1e4f},
    {"llama2-13b", 5120, 13824, 40, 40, 40, 32000, 4096, 1e4f},
    {"llama2-70b", 8192, 28672, 80, 64, 8, 32000, 4096, 1e4f},
    {"llama3-8b", 4096, 14336, 32, 32, 8, 128256, 8192, 5e5f},
    {"llama3-70b", 8192, 28672, 80, 64, 8, 128256, 8192, 5e5f},
};

constexpr const char* kPrefix = "synthetic:";

/// Every element i equals synthetic_weight(seed, tensor_id, i, std); one Philox call serves
/// four consecutive elements (4x faster than calling synthetic_weight per element). Large
/// tensors are drawn by several threads (each element is a pure function of its index), which
/// matters for the GPU benchmarks' 7B-parameter models.
std::vector<float> draw(uint64_t seed, uint32_t tensor_id, uint64_t n, float std) {
  std::vector<float> t(n);
  const uint64_t blocks = (n + 3) / 4;
  auto fill = [&](uint64_t first, uint64_t last) {
    for (uint64_t block = first; block < last; ++block) {
      const Philox4x32 r = random_bits(seed, block, RngStream::kWeights, tensor_id);
      for (uint64_t w = 0; w < 4 && block * 4 + w < n; ++w) {
        t[block * 4 + w] = synthetic_weight_from_bits(r[w], std);
      }
    }
  };
  const uint64_t threads =
      n < (uint64_t(1) << 22) ? 1 : std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (uint64_t i = 1; i < threads; ++i) {
    pool.emplace_back(fill, blocks * i / threads, blocks * (i + 1) / threads);
  }
  fill(0, blocks / threads);
  for (std::thread& th : pool) th.join();
  return t;
}

}  // namespace

std::vector<std::string> synthetic_model_names() {
  std::vector<std::string> names;
  for (const SyntheticShape& s : kShapes) names.push_back(std::string(kPrefix) + s.name);
  return names;
}

ModelConfig synthetic_config(const std::string& name) {
  const std::string bare =
      name.rfind(kPrefix, 0) == 0 ? name.substr(std::char_traits<char>::length(kPrefix)) : name;
  for (const SyntheticShape& s : kShapes) {
    if (bare != s.name) continue;
    ModelConfig c;
    c.name = std::string(kPrefix) + s.name;
    c.dim = s.dim;
    c.hidden_dim = s.hidden_dim;
    c.n_layers = s.n_layers;
    c.n_heads = s.n_heads;
    c.n_kv_heads = s.n_kv_heads;
    c.head_dim = s.dim / s.n_heads;
    c.vocab_size = s.vocab_size;
    c.max_seq_len = s.max_seq_len;
    c.rope_theta = s.rope_theta;
    c.rope_style = RopeStyle::kAdjacentPairs;
    c.norm_eps = 1e-5f;
    c.tied_classifier = false;
    return c;
  }
  std::string known;
  for (const std::string& n : synthetic_model_names()) known += (known.empty() ? "" : ", ") + n;
  throw InvalidArgument("unknown synthetic model '" + name + "'; known: " + known);
}

Model make_synthetic_model(const std::string& name, uint64_t seed, int64_t max_bytes) {
  return make_synthetic_model(synthetic_config(name), seed, max_bytes);
}

Model make_synthetic_model(const ModelConfig& config, uint64_t seed, int64_t max_bytes) {
  config.validate(config.name);
  Model m;
  m.config = config;
  const ModelConfig& c = m.config;
  m.source = c.name;
  const int64_t bytes = m.weight_bytes(4);
  if (bytes > max_bytes) {
    throw InvalidArgument(c.name + " has " + std::to_string(c.param_count()) + " parameters (" +
                          std::to_string(bytes >> 20) +
                          " MiB in fp32), more than the host limit of " +
                          std::to_string(max_bytes >> 20) +
                          " MiB; use synthetic_config() for its shapes, or the GPU path that "
                          "generates the weights on the device");
  }
  auto tensor = [&](const char* name, int layer) { return synthetic_tensor(c, seed, name, layer); };
  m.token_embedding = tensor("token_embedding", -1);
  m.layers.resize(c.n_layers);
  for (int l = 0; l < c.n_layers; ++l) {
    LayerWeights& w = m.layers[l];
    w.attn_norm = tensor("attn_norm", l);
    w.wq = tensor("wq", l);
    w.wk = tensor("wk", l);
    w.wv = tensor("wv", l);
    w.wo = tensor("wo", l);
    w.ffn_norm = tensor("ffn_norm", l);
    w.w1 = tensor("w1", l);
    w.w2 = tensor("w2", l);
    w.w3 = tensor("w3", l);
  }
  m.final_norm = tensor("final_norm", -1);
  if (!c.tied_classifier) m.classifier = tensor("classifier", -1);
  m.validate();
  return m;
}

std::vector<float> synthetic_tensor(const ModelConfig& c, uint64_t seed, const std::string& name,
                                    int layer) {
  const uint64_t d = c.dim, h = c.hidden_dim, q = c.q_dim(), kv = c.kv_dim(), v = c.vocab_size;
  const float in_dim = 1.0f / std::sqrt(float(d));  // fan_in = dim: wq, wk, wv, w1, w3, classifier
  const float in_q = 1.0f / std::sqrt(float(q));    // fan_in = q_dim: wo
  const float in_hidden = 1.0f / std::sqrt(float(h));  // fan_in = hidden_dim: w2
  if (layer < 0) {
    if (name == "token_embedding") {
      return draw(seed, synthetic_tensor_id(SyntheticTensor::kEmbedding), v * d, 1.0f);
    }
    if (name == "final_norm") return std::vector<float>(d, 1.0f);
    if (name == "classifier") {
      return draw(seed, synthetic_tensor_id(SyntheticTensor::kClassifier), v * d, in_dim);
    }
  } else if (layer < c.n_layers) {
    using T = SyntheticLayerTensor;
    auto id = [layer](T tensor) { return synthetic_tensor_id(layer, tensor); };
    if (name == "attn_norm" || name == "ffn_norm") return std::vector<float>(d, 1.0f);
    if (name == "wq") return draw(seed, id(T::kWq), q * d, in_dim);
    if (name == "wk") return draw(seed, id(T::kWk), kv * d, in_dim);
    if (name == "wv") return draw(seed, id(T::kWv), kv * d, in_dim);
    if (name == "wo") return draw(seed, id(T::kWo), d * q, in_q);
    if (name == "w1") return draw(seed, id(T::kW1), h * d, in_dim);
    if (name == "w2") return draw(seed, id(T::kW2), d * h, in_hidden);
    if (name == "w3") return draw(seed, id(T::kW3), h * d, in_dim);
  }
  throw InvalidArgument("synthetic_tensor: no tensor '" + name + "' in layer " +
                        std::to_string(layer) + " of " + c.name);
}

}  // namespace nanoserve
