#include "chapters/ch05_quantization/quantized_memory.h"

#include <array>

#include "common/quant/packing.h"

namespace nanoserve::ch05 {

namespace {

/// (rows, cols) of the seven linears of a block, in `LayerWeights` order.
std::array<std::array<std::int64_t, 2>, 7> linear_shapes(const ModelConfig& c) {
  const std::int64_t d = c.dim, h = c.hidden_dim, q = c.q_dim(), kv = c.kv_dim();
  return {{{q, d}, {kv, d}, {kv, d}, {d, q}, {h, d}, {d, h}, {h, d}}};  // wq wk wv wo w1 w2 w3
}

std::int64_t rest_values(const ModelConfig& c) {
  const std::int64_t table = std::int64_t(c.vocab_size) * c.dim;
  return table * (c.tied_classifier ? 1 : 2) + std::int64_t(2 * c.n_layers + 1) * c.dim;
}

}  // namespace

std::int64_t quantized_linear_bytes(int rows, int cols, const quant::QuantScheme& scheme,
                                    bool act_order) {
  const std::int64_t params = std::int64_t(rows) * scheme.groups(cols);
  return std::int64_t(rows) * quant::packed_row_bytes(cols, scheme.bits) +
         params * 2 * (scheme.symmetric ? 1 : 2) + (act_order ? 4 * std::int64_t(cols) : 0);
}

WeightBytes dense_weight_bytes(const ModelConfig& config, int bytes_per_value) {
  WeightBytes w;
  for (const auto& [rows, cols] : linear_shapes(config)) w.linear_weights += rows * cols;
  w.linear_weights *= config.n_layers;
  w.linears = w.linear_weights * bytes_per_value;
  w.rest = rest_values(config) * bytes_per_value;
  return w;
}

WeightBytes quantized_weight_bytes(const ModelConfig& config, const quant::QuantScheme& scheme,
                                   int rest_bytes_per_value, bool act_order) {
  WeightBytes w;
  for (const auto& [rows, cols] : linear_shapes(config)) {
    w.linear_weights += rows * cols;
    w.linears += quantized_linear_bytes(int(rows), int(cols), scheme, act_order);
  }
  w.linear_weights *= config.n_layers;
  w.linears *= config.n_layers;
  w.rest = rest_values(config) * rest_bytes_per_value;
  return w;
}

}  // namespace nanoserve::ch05
