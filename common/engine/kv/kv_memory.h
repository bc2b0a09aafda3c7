#pragma once
/// \file
/// \brief How much memory the KV cache of a model needs — the arithmetic chapter 1 teaches:
///
///     bytes per token = 2 (K and V) × n_layers × n_kv_heads × head_dim × bytes per element
///
/// Two common mistakes give larger numbers: using the model width `dim` (= n_heads × head_dim)
/// where the formula needs `n_kv_heads × head_dim` ignores grouped-query attention (GQA), which
/// shares each K/V head among n_heads / n_kv_heads query heads (8× less KV for Llama-2-70B and
/// Llama-3); and counting only K or only V halves the truth.

#include <cstdint>
#include <string>
#include <vector>

#include "common/model_config.h"

namespace nanoserve::engine {

/// \brief KV memory of one model at one storage type, context and batch.
///
/// \par Example
/// \snippet tests/ch01/test_examples_model.cpp KvMemoryEstimate
struct KvMemoryEstimate {
  std::string model;               ///< config name
  int bytes_per_element = 0;       ///< 2 (fp16/bf16) or 4 (fp32)
  int context = 0;                 ///< positions per request
  int batch = 0;                   ///< requests held at once
  std::int64_t bytes_per_token = 0;    ///< 2 × n_layers × n_kv_heads × head_dim × bytes
  std::int64_t bytes_per_request = 0;  ///< bytes_per_token × context
  std::int64_t bytes_per_batch = 0;    ///< bytes_per_request × batch
  /// \brief What `2 × n_layers × dim × bytes` would claim (the formula without GQA).
  std::int64_t bytes_per_token_without_gqa = 0;
};

/// \brief The estimate for `config` (only its shape is used). Throws `InvalidArgument` for a
/// non-positive bytes_per_element, context or batch.
KvMemoryEstimate estimate_kv_memory(const ModelConfig& config, int bytes_per_element, int context,
                                    int batch);

/// \brief The named real configurations the calculator prints by default: Llama-2-7B, 13B, 70B
/// and Llama-3-8B, 70B (their published shapes; `synthetic_config` names).
std::vector<std::string> kv_memory_reference_models();

/// \brief The positions per sequence a KV cache of `config` is made for: `max_seq_len`, or
/// the model's context when it is 0. Throws `InvalidArgument` naming `cache` (e.g.
/// "NaiveKVCache") when the result is outside [1, config.max_seq_len].
int checked_cache_context(const ModelConfig& config, int max_seq_len, const char* cache);

}  // namespace nanoserve::engine
