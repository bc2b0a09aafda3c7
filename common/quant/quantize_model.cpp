#include "common/quant/quantize_model.h"

#include <chrono>
#include <cstdio>

#include "common/error.h"
#include "common/quant/calibration.h"
#include "common/quant/rtn.h"

namespace nanoserve::quant {

namespace {

using LI = oracle::LinearInput;

QuantizedLinear rtn_linear(const Model& m, int layer, LinearId id, const QuantScheme& scheme) {
  const std::vector<float>& w = linear_weights(m.layers[size_t(layer)], id);
  return quantize_rtn(w.data(), linear_rows(m.config, id), linear_cols(m.config, id), scheme);
}

/// The GPTQ steps of one block: the linears that share an input, in forward order.
const std::vector<std::vector<LinearId>>& gptq_steps() {
  static const std::vector<std::vector<LinearId>> steps = {
      {LinearId::kWq, LinearId::kWk, LinearId::kWv},
      {LinearId::kWo},
      {LinearId::kW1, LinearId::kW3},
      {LinearId::kW2}};
  return steps;
}

/// GPTQ of `ids` in block `layer` of `work` with statistics `stats`; writes the dequantized
/// weights back into `work`, so later passes see the quantized block.
double gptq_linears(Model& work, int layer, const std::vector<LinearId>& ids, const BlockStats& stats,
                    const QuantizeOptions& o, QuantizedLayer& out) {
  double loss = 0;
  for (LinearId id : ids) {
    std::vector<float>& w = linear_weights(work.layers[size_t(layer)], id);
    GptqResult r = gptq_quantize(w.data(), linear_rows(work.config, id), linear_cols(work.config, id),
                                 stats[linear_input(id)].hessian(), o.scheme, o.gptq);
    w = r.weight.dequantize();
    out[id] = std::move(r.weight);
    loss += r.loss;
  }
  return loss;
}

void quantize_gptq(Model& work, const std::vector<std::vector<int>>& calibration,
                   const QuantizeOptions& o, QuantizedModel& q, QuantizeReport& report) {
  for (int l = 0; l < work.config.n_layers; ++l) {
    double loss = 0;
    if (o.true_sequential) {
      for (const std::vector<LinearId>& step : gptq_steps()) {
        const BlockStats stats = collect_block_stats(work, calibration, l, l)[0];
        loss += gptq_linears(work, l, step, stats, o, q.layers[size_t(l)]);
      }
    } else {
      const BlockStats stats = collect_block_stats(work, calibration, l, l)[0];
      for (const std::vector<LinearId>& step : gptq_steps()) {
        loss += gptq_linears(work, l, step, stats, o, q.layers[size_t(l)]);
      }
    }
    report.gptq_loss.push_back(loss);
    if (o.progress) o.progress("gptq: block " + std::to_string(l) + " loss " + std::to_string(loss));
  }
}

void quantize_awq(Model& work, const std::vector<std::vector<int>>& calibration,
                  const QuantizeOptions& o, QuantizedModel& q, QuantizeReport& report) {
  for (int l = 0; l < work.config.n_layers; ++l) {
    const BlockStats stats = collect_block_stats(work, calibration, l, l)[0];
    const AwqLayerReport r = awq_transform_layer(work, l, stats, o.scheme, o.awq);
    report.awq.push_back(r);
    if (o.progress) {
      char line[160];
      std::snprintf(line, sizeof line, "awq: block %d alpha qkv %.2f wo %.2f w13 %.2f w2 %.2f, %d groups clipped",
                    l, r.alpha_qkv, r.alpha_wo, r.alpha_w13, r.alpha_w2, r.clipped_groups);
      o.progress(line);
    }
  }
  // The norms (and w3, wv) now carry the folded scales; quantize every transformed linear.
  for (int l = 0; l < work.config.n_layers; ++l) {
    for (LinearId id : kLinearIds) q.layers[size_t(l)][id] = rtn_linear(work, l, id, o.scheme);
  }
}

}  // namespace

QuantizedModel quantize_model(const Model& model,
                              const std::vector<std::vector<int>>& calibration,
                              const QuantizeOptions& options, QuantizeReport* report) {
  const auto start = std::chrono::steady_clock::now();
  options.scheme.validate();
  if (options.method != QuantMethod::kRtn && calibration.empty()) {
    throw InvalidArgument(std::string("quantize_model: ") + to_string(options.method) +
                          " needs calibration sequences");
  }
  QuantizeReport local;
  QuantizeReport& rep = report ? *report : local;
  rep = QuantizeReport{};
  QuantizedModel q;
  q.scheme = options.scheme;
  q.method = options.method;
  q.layers.resize(size_t(model.config.n_layers));
  Model work = model;  // GPTQ: quantized blocks written back; AWQ: scales folded in
  switch (options.method) {
    case QuantMethod::kRtn:
      for (int l = 0; l < model.config.n_layers; ++l) {
        for (LinearId id : kLinearIds) q.layers[size_t(l)][id] = rtn_linear(model, l, id, options.scheme);
      }
      break;
    case QuantMethod::kGptq: quantize_gptq(work, calibration, options, q, rep); break;
    case QuantMethod::kAwq: quantize_awq(work, calibration, options, q, rep); break;
  }
  q.base = strip_linears(work);
  rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return q;
}

}  // namespace nanoserve::quant
