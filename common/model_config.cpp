#include "common/model_config.h"

#include <cmath>

#include "common/error.h"

namespace nanoserve {

const char* to_string(RopeStyle style) {
  return style == RopeStyle::kAdjacentPairs ? "adjacent-pairs" : "rotate-half";
}

const char* to_string(RopeScalingType type) {
  switch (type) {
    case RopeScalingType::kNone: return "none";
    case RopeScalingType::kLinear: return "linear";
    case RopeScalingType::kLlama3: return "llama3";
  }
  return "unknown";
}

int64_t ModelConfig::param_count() const {
  const int64_t d = dim, h = hidden_dim, q = q_dim(), kv = kv_dim();
  const int64_t per_layer = d                 // attention RMSNorm
                            + q * d           // wq
                            + 2 * kv * d      // wk, wv
                            + d * q           // wo
                            + d               // FFN RMSNorm
                            + 3 * h * d       // w1, w2, w3
                            + (attention_bias ? q + 2 * kv : 0);  // bq, bk, bv
  const int64_t embedding = int64_t(vocab_size) * d;
  return embedding + n_layers * per_layer + d + (tied_classifier ? 0 : embedding);
}

int64_t ModelConfig::kv_bytes_per_token(int bytes_per_element) const {
  return 2LL * n_layers * n_kv_heads * head_dim * bytes_per_element;
}

void check_config_field(const std::string& source, const std::string& field, int64_t value,
                        int64_t lo, int64_t hi) {
  if (value < lo || value > hi) {
    throw LoadError(source, field,
                    std::to_string(value) + " is outside [" + std::to_string(lo) + ", " +
                        std::to_string(hi) + "]");
  }
}

void ModelConfig::validate(const std::string& source) const {
  using L = ConfigLimits;
  check_config_field(source, "dim", dim, 1, L::kMaxDim);
  check_config_field(source, "hidden_dim", hidden_dim, 1, L::kMaxHiddenDim);
  check_config_field(source, "n_layers", n_layers, 1, L::kMaxLayers);
  check_config_field(source, "n_heads", n_heads, 1, L::kMaxHeads);
  check_config_field(source, "n_kv_heads", n_kv_heads, 1, n_heads);
  check_config_field(source, "head_dim", head_dim, 2, L::kMaxHeadDim);
  check_config_field(source, "vocab_size", vocab_size, 1, L::kMaxVocab);
  check_config_field(source, "max_seq_len", max_seq_len, 1, L::kMaxSeqLen);
  if (n_heads % n_kv_heads != 0) {
    throw LoadError(source, "n_kv_heads",
                    std::to_string(n_kv_heads) + " does not divide n_heads=" +
                        std::to_string(n_heads));
  }
  if (head_dim % 2 != 0) {
    throw LoadError(source, "head_dim", std::to_string(head_dim) + " is odd; RoPE needs pairs");
  }
  if (!(rope_theta > 0.0f) || !(norm_eps > 0.0f) || norm_eps > 1.0f) {
    throw LoadError(source, rope_theta > 0.0f ? "norm_eps" : "rope_theta",
                    "must be positive (and norm_eps <= 1)");
  }
  const RopeScaling& rs = rope_scaling;
  if (rs.type != RopeScalingType::kNone && !(rs.factor > 0.0f && std::isfinite(rs.factor))) {
    throw LoadError(source, "rope_scaling.factor", "must be a positive finite number");
  }
  if (!rs.freq_factors.empty()) {
    if (rs.freq_factors.size() != size_t(head_dim / 2)) {
      throw LoadError(source, "rope_freqs.weight",
                      std::to_string(rs.freq_factors.size()) + " frequency factors, expected one "
                      "per RoPE pair (head_dim / 2 = " + std::to_string(head_dim / 2) + ")");
    }
    for (size_t i = 0; i < rs.freq_factors.size(); ++i) {
      const float ff = rs.freq_factors[i];
      if (!(ff > 0.0f) || !std::isfinite(ff)) {
        throw LoadError(source, "rope_freqs.weight",
                        "factor " + std::to_string(i) + " is " + std::to_string(ff) +
                            ", not a positive finite number");
      }
    }
  }
  if (rs.type == RopeScalingType::kLlama3) {
    if (!(rs.low_freq_factor > 0.0f) || !(rs.high_freq_factor > rs.low_freq_factor) ||
        !std::isfinite(rs.high_freq_factor)) {
      throw LoadError(source, "rope_scaling",
                      "llama3 needs 0 < low_freq_factor < high_freq_factor (got " +
                          std::to_string(rs.low_freq_factor) + ", " +
                          std::to_string(rs.high_freq_factor) + ")");
    }
    check_config_field(source, "rope_scaling.original_max_position_embeddings",
                       rs.original_max_position_embeddings, 1, ConfigLimits::kMaxSeqLen);
  }
}

}  // namespace nanoserve
