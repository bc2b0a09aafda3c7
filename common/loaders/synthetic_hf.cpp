#include "common/loaders/synthetic_hf.h"

#include <filesystem>
#include <string_view>
#include <system_error>

#include "common/error.h"
#include "common/io/output_file.h"
#include "common/loaders/tensor_decode.h"

namespace nanoserve {

namespace {

/// `v` with each value rounded to bf16 (to nearest even), as a BF16 checkpoint stores it.
void round_to_bf16(std::vector<float>& v) {
  const std::vector<uint8_t> bytes = encode_bf16(v);
  decode_bf16(bytes.data(), v.size(), v.data());
}

/// `n` values of synthetic tensor `id` around `center`: uniform, standard deviation `std`.
std::vector<float> drawn(uint64_t seed, uint32_t id, size_t n, float center, float std) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = center + synthetic_weight(seed, id, i, std);
  return v;
}

}  // namespace

std::vector<std::string> synthetic_hf_architectures() { return {"llama", "qwen2", "mistral"}; }

Model make_synthetic_hf_model(const std::string& architecture, uint64_t seed) {
  if (architecture != "llama" && architecture != "qwen2" && architecture != "mistral") {
    throw InvalidArgument("synthetic HF model: architecture '" + architecture +
                          "' is not one of llama, qwen2, mistral");
  }
  ModelConfig c;
  c.name = "synthetic-hf-" + architecture;
  c.architecture = architecture;
  c.dim = 64;
  c.hidden_dim = 128;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 16;
  c.vocab_size = 96;
  c.max_seq_len = 64;
  c.rope_style = RopeStyle::kRotateHalf;
  c.norm_eps = 1e-6f;
  c.tied_classifier = false;
  if (architecture == "llama") {  // Llama 3.1's rule, scaled down so that all three bands occur
    c.rope_theta = 500000.0f;
    c.rope_scaling = {RopeScalingType::kLlama3, 8.0f, 1.0f, 4.0f, 64};
    c.max_seq_len = 128;  // beyond the original 64 positions, as in Llama 3.1 (transformers warns otherwise)
  } else if (architecture == "qwen2") {
    c.rope_theta = 1e6f;
    c.attention_bias = true;
    c.tied_classifier = true;
  } else {
    c.head_dim = 32;  // n_heads * head_dim = 128 != dim: head_dim comes from the config
  }
  ModelConfig no_bias = c;  // make_synthetic_model draws no biases; they are drawn below
  no_bias.attention_bias = false;
  Model m = make_synthetic_model(no_bias, seed);
  m.config = c;
  m.source = c.name;
  // Norm gains on the ids make_synthetic_model reserves for them (it sets them to 1); biases
  // on ids 9-11 of each layer's 16, which it does not use. std 0.2 ~ U(±0.35), 0.29 ~ U(±0.5).
  const auto d = size_t(c.dim);
  m.final_norm = drawn(seed, synthetic_tensor_id(SyntheticTensor::kFinalNorm), d, 1.0f, 0.2f);
  for (int l = 0; l < c.n_layers; ++l) {
    LayerWeights& w = m.layers[size_t(l)];
    w.attn_norm = drawn(seed, synthetic_tensor_id(l, SyntheticLayerTensor::kAttnNorm), d, 1.0f, 0.2f);
    w.ffn_norm = drawn(seed, synthetic_tensor_id(l, SyntheticLayerTensor::kFfnNorm), d, 1.0f, 0.2f);
    if (c.attention_bias) {
      const uint32_t first = synthetic_tensor_id(l, SyntheticLayerTensor::kAttnNorm) + 9;
      w.bq = drawn(seed, first, size_t(c.q_dim()), 0.0f, 0.29f);
      w.bk = drawn(seed, first + 1, size_t(c.kv_dim()), 0.0f, 0.29f);
      w.bv = drawn(seed, first + 2, size_t(c.kv_dim()), 0.0f, 0.29f);
    }
  }
  round_to_bf16(m.token_embedding);
  round_to_bf16(m.final_norm);
  round_to_bf16(m.classifier);
  for (LayerWeights& w : m.layers) {
    for (std::vector<float>* v : {&w.attn_norm, &w.wq, &w.wk, &w.wv, &w.wo, &w.ffn_norm, &w.w1,
                                  &w.w2, &w.w3, &w.bq, &w.bk, &w.bv}) {
      round_to_bf16(*v);
    }
  }
  m.validate();
  return m;
}

void write_hf_checkpoint(const HfShardedCheckpoint& checkpoint, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error(dir + ": cannot create the directory: " + ec.message());
  write_output_file(dir + "/config.json", checkpoint.config_json);
  write_output_file(dir + "/model.safetensors.index.json", checkpoint.index_json);
  for (const auto& [file, bytes] : checkpoint.shards) {
    write_output_file(dir + "/" + file, std::string_view(reinterpret_cast<const char*>(bytes.data()),
                                                         bytes.size()));
  }
}

}  // namespace nanoserve
