#include "common/speculative/draft_models.h"

#include <string>

#include "common/error.h"

namespace nanoserve::speculative {

Model first_layers(const Model& model, int k) {
  if (k < 1 || k > model.config.n_layers || size_t(k) > model.layers.size()) {
    throw InvalidArgument("first_layers('" + model.config.name + "'): k = " + std::to_string(k) +
                          " is outside [1, n_layers = " + std::to_string(model.config.n_layers) +
                          "]");
  }
  Model draft;
  draft.config = model.config;
  draft.config.n_layers = k;
  draft.config.name = model.config.name + "-l" + std::to_string(k);
  draft.token_embedding = model.token_embedding;
  draft.layers.assign(model.layers.begin(), model.layers.begin() + k);
  draft.final_norm = model.final_norm;
  draft.classifier = model.classifier;
  draft.source = model.source + " (first " + std::to_string(k) + " layers)";
  return draft;
}

DraftModel layer_truncated_draft(const Model& target, int k) {
  DraftModel d;
  d.model = first_layers(target, k);
  d.weight_bytes = d.model.weight_bytes(4);
  d.label = "layers-" + std::to_string(k);
  return d;
}

DraftModel quantized_draft(const Model& target, const std::vector<std::vector<int>>& calibration,
                           const quant::QuantizeOptions& options) {
  const quant::QuantizedModel q = quant::quantize_model(target, calibration, options);
  DraftModel d;
  d.model = q.dequantize();
  d.label = options.scheme.label() + "-" + quant::to_string(options.method);
  d.model.config.name = target.config.name + "-" + d.label;
  d.weight_bytes = q.weight_bytes();
  return d;
}

}  // namespace nanoserve::speculative
