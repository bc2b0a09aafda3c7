#pragma once
/// \file
/// \brief `Model`: a `ModelConfig` plus its host weights in fp32 (llama2.c's
/// `TransformerWeights`). Every loader produces one; the oracle and the kernels consume it.

#include <string>
#include <vector>

#include "common/model_config.h"

namespace nanoserve {

/// \brief The weights of one transformer block, row-major, `y = W x`.
struct LayerWeights {
  std::vector<float> attn_norm;  ///< (dim) RMSNorm gain before attention
  std::vector<float> wq;         ///< (n_heads * head_dim, dim)
  std::vector<float> wk;         ///< (n_kv_heads * head_dim, dim)
  std::vector<float> wv;         ///< (n_kv_heads * head_dim, dim)
  std::vector<float> wo;         ///< (dim, n_heads * head_dim)
  std::vector<float> ffn_norm;   ///< (dim) RMSNorm gain before the FFN
  std::vector<float> w1;         ///< (hidden_dim, dim) gate projection
  std::vector<float> w2;         ///< (dim, hidden_dim) down projection
  std::vector<float> w3;         ///< (hidden_dim, dim) up projection
  std::vector<float> bq;         ///< (n_heads * head_dim) q bias; empty unless attention_bias
  std::vector<float> bk;         ///< (n_kv_heads * head_dim) k bias; empty unless attention_bias
  std::vector<float> bv;         ///< (n_kv_heads * head_dim) v bias; empty unless attention_bias
};

/// \brief A whole decoder: configuration and fp32 host weights.
struct Model {
  ModelConfig config;                ///< shapes and hyper-parameters
  std::vector<float> token_embedding;  ///< (vocab_size, dim)
  std::vector<LayerWeights> layers;    ///< n_layers blocks
  std::vector<float> final_norm;       ///< (dim)
  std::vector<float> classifier;       ///< (vocab_size, dim); empty when config.tied_classifier
  std::string source;                  ///< the file, directory or synthetic name it came from

  /// \brief The classifier matrix (vocab_size, dim): `classifier`, or the embedding when tied.
  const std::vector<float>& classifier_weights() const {
    return config.tied_classifier ? token_embedding : classifier;
  }
  /// \brief Throws `LoadError(source, tensor, …)` if any tensor's size disagrees with `config`
  /// or holds a non-finite value.
  void validate() const;
  /// \brief Bytes of all weights at `bytes_per_element` (classifier counted once when tied).
  int64_t weight_bytes(int bytes_per_element) const {
    return config.param_count() * bytes_per_element;
  }
};

}  // namespace nanoserve
