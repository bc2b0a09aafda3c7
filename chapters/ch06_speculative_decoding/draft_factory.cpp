#include "chapters/ch06_speculative_decoding/draft_factory.h"

#include "common/engine/model/quantized_device_model.h"

#include <algorithm>
#include <utility>

#include "common/error.h"
#include "common/speculative/draft_model_proposer.h"
#include "common/speculative/draft_models.h"
#include "common/speculative/ngram_proposer.h"

namespace nanoserve::ch06 {

namespace {

[[noreturn]] void bad_draft(const std::string& name) {
  throw InvalidArgument("draft '" + name +
                        "': expected layers-K (K >= 1), int8-rtn, int4-rtn, int4-gptq, "
                        "int4-awq or ngram");
}

}  // namespace

DraftSpec parse_draft_spec(const std::string& name) {
  DraftSpec s;
  s.name = name;
  if (name == "ngram") {
    s.kind = DraftKind::kNgram;
    return s;
  }
  const std::string layers = "layers-";
  if (name.rfind(layers, 0) == 0) {
    const std::string k = name.substr(layers.size());
    const bool digits =
        std::all_of(k.begin(), k.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (k.empty() || k.size() > 4 || !digits) bad_draft(name);
    s.kind = DraftKind::kLayerTruncated;
    s.layers = std::stoi(k);
    if (s.layers < 1) bad_draft(name);
    return s;
  }
  s.kind = DraftKind::kQuantized;
  if (name == "int8-rtn") {
    s.quant.scheme = {8, 0, true};
    s.quant.method = quant::QuantMethod::kRtn;
    return s;
  }
  if (name.rfind("int4-", 0) != 0) bad_draft(name);
  s.quant.scheme = {4, 32, true};
  try {
    s.quant.method = quant::parse_quant_method(name.substr(5));
  } catch (const InvalidArgument&) {
    bad_draft(name);
  }
  return s;
}

std::vector<std::string> default_draft_names(int n_layers) {
  std::vector<std::string> names;
  for (int k : {1, n_layers / 2, n_layers - 1}) {
    const std::string name = "layers-" + std::to_string(k);
    if (k >= 1 && std::find(names.begin(), names.end(), name) == names.end()) {
      names.push_back(name);
    }
  }
  for (const char* q : {"int8-rtn", "int4-rtn", "int4-gptq", "int4-awq", "ngram"}) {
    names.emplace_back(q);
  }
  return names;
}

std::unique_ptr<engine::DeviceModel> quantized_device_model(const quant::QuantizedModel& q, DType dtype,
                                                    bool* dequantized) {
  // Chapter 5's quantized linears: the draft streams INT8/INT4 codes, as a real quantized
  // draft does, and accepts and rejects exactly as the quantized model would.
  if (dequantized != nullptr) *dequantized = false;
  return std::make_unique<engine::DeviceModel>(engine::make_quantized_device_model(q, dtype));
}

KernelDraft make_kernel_draft(const Model& target, const DraftSpec& spec,
                              const std::vector<std::vector<int>>& calibration, DType dtype,
                              const engine::PagedDecoderOptions& options) {
  KernelDraft d;
  d.label = spec.name;
  const int vocab = target.config.vocab_size;
  switch (spec.kind) {
    case DraftKind::kNgram:
      d.weights = "none (prompt lookup)";
      d.proposer = std::make_unique<speculative::NgramProposer>();
      return d;
    case DraftKind::kLayerTruncated: {
      d.host_model = speculative::first_layers(target, spec.layers);
      const Model& m = d.host_model;
      d.weights = std::string(dtype_name(dtype)) + ", " + std::to_string(spec.layers) + " of " +
                  std::to_string(target.config.n_layers) + " blocks";
      d.model = std::make_unique<engine::PagedDecoder>(std::make_unique<engine::DeviceModel>(m, dtype),
                                                 options, m.config.name);
      d.weight_bytes = d.model->device_model().weight_bytes();
      break;
    }
    case DraftKind::kQuantized: {
      const quant::QuantizedModel q = quant::quantize_model(target, calibration, spec.quant);
      const std::string format =
          spec.quant.scheme.label() + "-" + quant::to_string(spec.quant.method);
      d.host_model = q.dequantize();
      d.host_model.config.name = target.config.name + "-" + format;
      d.model = std::make_unique<engine::PagedDecoder>(
          quantized_device_model(q, dtype, &d.dequantized), options, d.host_model.config.name);
      d.weight_bytes = q.weight_bytes();
      d.weights = d.dequantized ? std::string(dtype_name(dtype)) + " dequantized from " + format
                                : format;
      if (d.dequantized) d.label += " (dequantized)";
      break;
    }
  }
  d.proposer = std::make_unique<speculative::DraftModelProposer>(*d.model, vocab);
  return d;
}

}  // namespace nanoserve::ch06
