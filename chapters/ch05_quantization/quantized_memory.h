#pragma once
/// \file
/// \brief The weight memory of a model with quantized linears, computed from its shape alone
/// (no weights needed): what chapter 5's memory table prints for 7B–70B configs, and why
/// decode gets faster — a decode step streams every linear's bytes once, so its time on a
/// memory-bound device is about (weight bytes) / (memory bandwidth).
///
/// Per linear W (rows, cols) in a `quant::QuantScheme` (the NSQM layout, quant_io.h):
///
///     codes    rows · ceil(cols · bits / 8)   (INT4: two codes per byte, rows start on a byte)
///     scales   rows · groups · 2               fp16
///     zeros    rows · groups · 2               fp16, asymmetric only
///     g_idx    cols · 4                        int32, act-order only
///
/// so INT4 with groups of 128 costs 4 + 16/128 = 4.125 bits per weight (symmetric), INT8
/// per channel 8 + 16/cols. The embedding, the classifier and the norms stay in a dense
/// storage type (quantized_model.h says why).

#include <cstdint>

#include "common/model_config.h"
#include "common/quant/quant_scheme.h"

namespace nanoserve::ch05 {

/// \brief Bytes of one quantized (rows, cols) linear in `scheme`, with a g_idx when `act_order`.
std::int64_t quantized_linear_bytes(int rows, int cols, const quant::QuantScheme& scheme,
                                    bool act_order = false);

/// \brief The weight bytes of a model, split as decode reads them.
struct WeightBytes {
  std::int64_t linears = 0;  ///< the seven linears of every block (streamed every decode step)
  std::int64_t rest = 0;     ///< embedding, classifier (when untied) and norms
  std::int64_t linear_weights = 0;  ///< number of linear weights (for bits per weight)
  /// \brief linears + rest.
  std::int64_t total() const { return linears + rest; }
  /// \brief Stored bits per linear weight, scales and zero points included.
  double bits_per_linear_weight() const {
    return linear_weights > 0 ? 8.0 * double(linears) / double(linear_weights) : 0.0;
  }
};

/// \brief Every weight of `config` dense, `bytes_per_value` bytes each (4 fp32, 2 fp16/bf16).
WeightBytes dense_weight_bytes(const ModelConfig& config, int bytes_per_value);

/// \brief The linears of `config` quantized in `scheme` (g_idx included when `act_order`),
/// everything else dense with `rest_bytes_per_value` bytes per value.
WeightBytes quantized_weight_bytes(const ModelConfig& config, const quant::QuantScheme& scheme,
                                   int rest_bytes_per_value, bool act_order = false);

}  // namespace nanoserve::ch05
