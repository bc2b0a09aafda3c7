#pragma once
/// \file
/// \brief `ModelConfig`: the shape of a Llama-family decoder (llama2.c's `Config`, extended).

#include <cstdint>
#include <string>
#include <vector>

namespace nanoserve {

/// \brief How RoPE pairs the dimensions of a head (the two conventions in the wild).
///
///     adjacent pairs (llama2.c, GGUF `llama`):  (x0,x1) (x2,x3) (x4,x5) (x6,x7)
///     rotate half    (Hugging Face, GPT-NeoX):  (x0,x4) (x1,x5) (x2,x6) (x3,x7)
///
/// In both, pair i of a head of size `head_dim` rotates by `pos * theta^(-2i/head_dim)`.
enum class RopeStyle {
  kAdjacentPairs,  ///< pair (2i, 2i+1)
  kRotateHalf,     ///< pair (i, i + head_dim/2)
};

/// \brief Returns "adjacent-pairs" or "rotate-half".
const char* to_string(RopeStyle style);

/// \brief How the RoPE frequencies of a long-context checkpoint are rescaled (`rope_scaling`
/// of a Hugging Face `config.json`).
enum class RopeScalingType {
  kNone,    ///< plain RoPE: pair i turns at `theta^(-2i/head_dim)`
  kLinear,  ///< every frequency divided by `factor` (position interpolation)
  kLlama3,  ///< Llama 3.1's piecewise rule: long wavelengths divided by `factor`, short ones
            ///< kept, a smooth blend between (transformers' `_compute_llama3_parameters`)
};

/// \brief Returns "none", "linear" or "llama3".
const char* to_string(RopeScalingType type);

/// \brief The parameters of a `rope_scaling` entry; only those of `type` are read.
struct RopeScaling {
  RopeScalingType type = RopeScalingType::kNone;  ///< which rule
  float factor = 1.0f;                            ///< linear and llama3: the divisor
  float low_freq_factor = 1.0f;                   ///< llama3: wavelengths above
                                                  ///< original/low_freq_factor are divided
  float high_freq_factor = 4.0f;                  ///< llama3: wavelengths below
                                                  ///< original/high_freq_factor are kept
  int original_max_position_embeddings = 8192;    ///< llama3: the pre-training context
  /// \brief Per-pair divisors applied before `type`'s rule, one per RoPE pair (head_dim / 2),
  /// or empty. llama.cpp stores Llama 3.1+'s llama3 rule this way, as the tensor
  /// `rope_freqs.weight` of a GGUF file (pair i turns at `inv_freq[i] / freq_factors[i]`).
  std::vector<float> freq_factors = {};
};

/// \brief The ranges `ModelConfig::validate` enforces: generous (Llama-3-405B fits) but they
/// reject garbage headers before any allocation. Loaders check each header field against its
/// range as they read it (`check_config_field`), so a bad field is named before anything is
/// derived from it (head_dim from dim / n_heads, RoPE dimensions from head_dim, …).
struct ConfigLimits {
  static constexpr int64_t kMaxDim = 65536;        ///< dim
  static constexpr int64_t kMaxHiddenDim = 262144;  ///< hidden_dim
  static constexpr int64_t kMaxLayers = 1024;      ///< n_layers
  static constexpr int64_t kMaxHeads = 1024;       ///< n_heads (and n_kv_heads <= n_heads)
  static constexpr int64_t kMaxHeadDim = 1024;     ///< head_dim (>= 2, even)
  static constexpr int64_t kMaxVocab = 1 << 24;    ///< vocab_size
  /// \brief max_seq_len: 2^20 positions, above the longest context in use (Qwen2.5-1M:
  /// 1,010,000). Programs size their KV caches by the positions a run needs, not by this.
  static constexpr int64_t kMaxSeqLen = 1 << 20;
};

/// \brief Throws `LoadError(source, field, "VALUE is outside [LO, HI]")` unless `lo <= value
/// <= hi` (`field` names the key as the file spells it, e.g. "llama.embedding_length").
void check_config_field(const std::string& source, const std::string& field, int64_t value,
                        int64_t lo, int64_t hi);

/// \brief The blueprint of a Llama-family decoder-only transformer.
///
/// Weights are `(rows, cols)` row-major with `y = W x`; see `Model` for every tensor's shape.
struct ModelConfig {
  std::string name;           ///< human-readable name (file stem or synthetic name)
  int dim = 0;                ///< model width d (residual stream)
  int hidden_dim = 0;         ///< FFN inner width (SwiGLU)
  int n_layers = 0;           ///< number of transformer blocks
  int n_heads = 0;            ///< query heads
  int n_kv_heads = 0;         ///< key/value heads (GQA when < n_heads)
  int head_dim = 0;           ///< width of one head (usually dim / n_heads)
  int vocab_size = 0;         ///< number of token ids
  int max_seq_len = 0;        ///< context length the model supports
  float rope_theta = 10000.0f;                        ///< RoPE base
  RopeStyle rope_style = RopeStyle::kAdjacentPairs;   ///< RoPE pairing convention
  float norm_eps = 1e-5f;     ///< RMSNorm epsilon
  bool tied_classifier = true;  ///< classifier shares the token embedding matrix
  RopeScaling rope_scaling;     ///< frequency rescaling (none for most models)
  /// \brief q, k and v projections carry a bias (Qwen2): `LayerWeights::bq/bk/bv` are filled.
  bool attention_bias = false;
  /// \brief The family as the file names it: "llama" (also Mistral), "qwen2" or "mistral".
  std::string architecture = "llama";

  /// \brief Width of all query heads together: `n_heads * head_dim`.
  int q_dim() const { return n_heads * head_dim; }
  /// \brief Width of all key (or value) heads together: `n_kv_heads * head_dim`.
  int kv_dim() const { return n_kv_heads * head_dim; }
  /// \brief Query heads per KV head (1 = plain multi-head attention).
  int gqa_group() const { return n_heads / n_kv_heads; }

  /// \brief Number of weights (the classifier counted once when tied).
  int64_t param_count() const;
  /// \brief Bytes of K and V for one token over all layers:
  /// `2 * n_layers * n_kv_heads * head_dim * bytes_per_element`.
  int64_t kv_bytes_per_token(int bytes_per_element) const;

  /// \brief Throws `LoadError(source, field, …)` when a field is outside its sane range or
  /// fields disagree (e.g. n_heads not a multiple of n_kv_heads).
  void validate(const std::string& source) const;
};

}  // namespace nanoserve
