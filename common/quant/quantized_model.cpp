#include "common/quant/quantized_model.h"

#include "common/error.h"

namespace nanoserve::quant {

const char* to_string(LinearId id) {
  switch (id) {
    case LinearId::kWq: return "wq";
    case LinearId::kWk: return "wk";
    case LinearId::kWv: return "wv";
    case LinearId::kWo: return "wo";
    case LinearId::kW1: return "w1";
    case LinearId::kW2: return "w2";
    case LinearId::kW3: return "w3";
  }
  return "unknown";
}

std::vector<float>& linear_weights(LayerWeights& layer, LinearId id) {
  switch (id) {
    case LinearId::kWq: return layer.wq;
    case LinearId::kWk: return layer.wk;
    case LinearId::kWv: return layer.wv;
    case LinearId::kWo: return layer.wo;
    case LinearId::kW1: return layer.w1;
    case LinearId::kW2: return layer.w2;
    case LinearId::kW3: return layer.w3;
  }
  throw InvalidArgument("linear_weights: unknown LinearId");
}

const std::vector<float>& linear_weights(const LayerWeights& layer, LinearId id) {
  return linear_weights(const_cast<LayerWeights&>(layer), id);
}

int linear_rows(const ModelConfig& c, LinearId id) {
  switch (id) {
    case LinearId::kWq: return c.q_dim();
    case LinearId::kWk:
    case LinearId::kWv: return c.kv_dim();
    case LinearId::kWo:
    case LinearId::kW2: return c.dim;
    case LinearId::kW1:
    case LinearId::kW3: return c.hidden_dim;
  }
  return 0;
}

int linear_cols(const ModelConfig& c, LinearId id) {
  switch (id) {
    case LinearId::kWo: return c.q_dim();
    case LinearId::kW2: return c.hidden_dim;
    default: return c.dim;
  }
}

oracle::LinearInput linear_input(LinearId id) {
  switch (id) {
    case LinearId::kWq:
    case LinearId::kWk:
    case LinearId::kWv: return oracle::LinearInput::kAttention;
    case LinearId::kWo: return oracle::LinearInput::kAttentionOut;
    case LinearId::kW1:
    case LinearId::kW3: return oracle::LinearInput::kFfn;
    case LinearId::kW2: return oracle::LinearInput::kFfnHidden;
  }
  return oracle::LinearInput::kAttention;
}

const char* to_string(QuantMethod method) {
  switch (method) {
    case QuantMethod::kRtn: return "rtn";
    case QuantMethod::kGptq: return "gptq";
    case QuantMethod::kAwq: return "awq";
  }
  return "unknown";
}

QuantMethod parse_quant_method(const std::string& name) {
  for (QuantMethod m : {QuantMethod::kRtn, QuantMethod::kGptq, QuantMethod::kAwq}) {
    if (name == to_string(m)) return m;
  }
  throw InvalidArgument("quantization method '" + name + "' is not one of rtn, gptq, awq");
}

Model QuantizedModel::dequantize() const {
  Model m = base;
  for (size_t l = 0; l < layers.size() && l < m.layers.size(); ++l) {
    for (LinearId id : kLinearIds) linear_weights(m.layers[l], id) = layers[l][id].dequantize();
  }
  return m;
}

int64_t QuantizedModel::linear_bytes() const {
  int64_t bytes = 0;
  for (const QuantizedLayer& layer : layers) {
    for (const QuantizedLinear& q : layer.linears) bytes += q.bytes();
  }
  return bytes;
}

int64_t QuantizedModel::weight_bytes() const {
  int64_t floats = int64_t(base.token_embedding.size() + base.final_norm.size() +
                           base.classifier.size());
  for (const LayerWeights& w : base.layers) floats += int64_t(w.attn_norm.size() + w.ffn_norm.size());
  return linear_bytes() + 4 * floats;
}

void QuantizedModel::validate(const std::string& file) const {
  const ModelConfig& c = base.config;
  // The fp32 tensors first (and the config, which gives every linear its shape): validate a
  // copy with zero linears standing in, since only their sizes matter there.
  Model shape_check = base;
  shape_check.source = file;
  c.validate(file);
  for (int l = 0; l < c.n_layers && l < int(shape_check.layers.size()); ++l) {
    for (LinearId id : kLinearIds) {
      linear_weights(shape_check.layers[size_t(l)], id)
          .assign(size_t(int64_t(linear_rows(c, id)) * linear_cols(c, id)), 0.0f);
    }
  }
  shape_check.validate();
  scheme.validate();
  if (int(layers.size()) != c.n_layers) {
    throw LoadError(file, "layers", std::to_string(layers.size()) + " quantized blocks, config says " +
                                        std::to_string(c.n_layers));
  }
  for (int l = 0; l < c.n_layers; ++l) {
    for (LinearId id : kLinearIds) {
      const QuantizedLinear& q = layers[size_t(l)][id];
      const std::string name = "layers." + std::to_string(l) + "." + to_string(id);
      if (q.rows != linear_rows(c, id) || q.cols != linear_cols(c, id)) {
        throw LoadError(file, name,
                        "shape (" + std::to_string(q.rows) + ", " + std::to_string(q.cols) +
                            "), expected (" + std::to_string(linear_rows(c, id)) + ", " +
                            std::to_string(linear_cols(c, id)) + ")");
      }
      if (q.scheme.bits != scheme.bits || q.scheme.group_size != scheme.group_size ||
          q.scheme.symmetric != scheme.symmetric) {
        throw LoadError(file, name, "scheme " + q.scheme.label() + " differs from the model's " +
                                        scheme.label());
      }
      q.validate(file, name);
    }
  }
}

Model strip_linears(const Model& model) {
  Model m = model;
  for (LayerWeights& w : m.layers) {
    for (LinearId id : kLinearIds) {
      linear_weights(w, id).clear();
      linear_weights(w, id).shrink_to_fit();
    }
  }
  return m;
}

}  // namespace nanoserve::quant
