#include "common/engine/model/serving_weights.h"

#include <regex>
#include <string>

#include "common/engine/model/quantized_device_model.h"
#include "common/error.h"
#include "common/quant/quant_io.h"

namespace nanoserve::engine {

namespace {

[[noreturn]] void bad_spec(const std::string& text) {
  throw InvalidArgument("--quant '" + text +
                        "': expected none, int8-rtn, int4-rtn, int4-gptq or int4-awq (each int4 "
                        "form with an optional -g<group>, e.g. int4-awq-g128), or an .nsqm file");
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The shape fields an NSQM file must share with the model it stands in for.
void check_shape(const ModelConfig& want, const ModelConfig& got, const std::string& path) {
  const auto field = [&](const char* name, long long a, long long b) {
    if (a != b) {
      throw LoadError(path, name,
                      std::to_string(b) + " in the file but " + std::to_string(a) +
                          " in the model it is served for ('" + want.name + "')");
    }
  };
  field("dim", want.dim, got.dim);
  field("hidden_dim", want.hidden_dim, got.hidden_dim);
  field("n_layers", want.n_layers, got.n_layers);
  field("n_heads", want.n_heads, got.n_heads);
  field("n_kv_heads", want.n_kv_heads, got.n_kv_heads);
  field("vocab_size", want.vocab_size, got.vocab_size);
}

}  // namespace

WeightsSpec parse_weights_spec(const std::string& text) {
  WeightsSpec s;
  s.text = text;
  if (text == "none") return s;
  if (ends_with(text, ".nsqm")) {
    s.kind = WeightsSpec::Kind::kFile;
    s.path = text;
    return s;
  }
  s.kind = WeightsSpec::Kind::kQuantize;
  if (text == "int8-rtn") {
    s.options.scheme = {8, 0, true};
    s.options.method = quant::QuantMethod::kRtn;
    return s;
  }
  static const std::regex int4(R"(int4-(rtn|gptq|awq)(-g([0-9]{1,5}))?)");
  std::smatch m;
  if (!std::regex_match(text, m, int4)) bad_spec(text);
  const int group = m[3].matched ? std::stoi(m[3].str()) : 32;
  if (group < 1) bad_spec(text);
  s.options.scheme = {4, group, true};
  s.options.method = quant::parse_quant_method(m[1].str());
  return s;
}

ServingWeights load_serving_weights(const Model& model, const WeightsSpec& spec, DType dtype,
                                    const std::vector<std::vector<int>>& calibration) {
  ServingWeights w;
  if (spec.kind == WeightsSpec::Kind::kDense) {
    w.device = std::make_unique<DeviceModel>(model, dtype);
    w.reference = round_weights(model, dtype);
    w.label = dtype_name(dtype);
  } else {
    quant::QuantizedModel q;
    if (spec.kind == WeightsSpec::Kind::kFile) {
      q = quant::load_quantized_model(spec.path);
      check_shape(model.config, q.base.config, spec.path);
      w.label = q.scheme.label() + "-" + quant::to_string(q.method) + " (" + spec.path + ")";
    } else {
      if (spec.needs_calibration() && calibration.empty()) {
        throw InvalidArgument("--quant " + spec.text +
                              ": GPTQ and AWQ need calibration sequences, and none were given");
      }
      q = quant::quantize_model(model, calibration, spec.options);
      w.label = q.scheme.label() + "-" + quant::to_string(q.method);
    }
    w.device = std::make_unique<DeviceModel>(make_quantized_device_model(q, dtype));
    w.reference = quantized_oracle_model(q, dtype);
    w.quantized = true;
  }
  w.weight_bytes = w.device->weight_bytes();
  return w;
}

}  // namespace nanoserve::engine
