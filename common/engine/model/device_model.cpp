#include "common/engine/model/device_model.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "common/error.h"
#include "kernels/linear.h"

namespace nanoserve::engine {

namespace {

/// fp32 values -> bytes of storage type T (each rounded once, to nearest even).
template <typename T>
std::vector<unsigned char> encode(const std::vector<float>& host) {
  std::vector<unsigned char> bytes(host.size() * sizeof(T));
  for (std::size_t i = 0; i < host.size(); ++i) {
    const T v = from_float<T>(host[i]);
    std::memcpy(bytes.data() + i * sizeof(T), &v, sizeof(T));
  }
  return bytes;
}

/// Bytes of storage type T -> fp32 values (exact).
template <typename T>
std::vector<float> decode(const std::vector<unsigned char>& bytes) {
  std::vector<float> out(bytes.size() / sizeof(T));
  for (std::size_t i = 0; i < out.size(); ++i) {
    T v;
    std::memcpy(&v, bytes.data() + i * sizeof(T), sizeof(T));
    out[i] = to_float(v);
  }
  return out;
}

// `parts` stacked into `*stacked` when `stacked_with` allows it (the parts are then dropped);
// otherwise the parts stay as they are.
void stack(std::unique_ptr<DeviceLinear>& stacked,
           const std::vector<std::unique_ptr<DeviceLinear>*>& parts) {
  std::vector<const DeviceLinear*> below;
  for (std::size_t i = 1; i < parts.size(); ++i) below.push_back(parts[i]->get());
  stacked = (*parts.front())->stacked_with(below);
  if (!stacked) return;
  for (std::unique_ptr<DeviceLinear>* p : parts) p->reset();
}

/// The host weights of the linear `name` ("wq" … "w3") of a block.
const std::vector<float>& layer_linear(const LayerWeights& w, const std::string& name) {
  if (name == "wq") return w.wq;
  if (name == "wk") return w.wk;
  if (name == "wv") return w.wv;
  if (name == "wo") return w.wo;
  if (name == "w1") return w.w1;
  if (name == "w2") return w.w2;
  if (name == "w3") return w.w3;
  throw InvalidArgument("DeviceModel: no linear layer named '" + name + "'");
}

std::vector<float> rounded(const std::vector<float>& v, DType dtype) {
  return dispatch_dtype(dtype, [&](auto tag) { return decode<decltype(tag)>(encode<decltype(tag)>(v)); });
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// DeviceTensor

DeviceTensor::DeviceTensor(const std::vector<float>& host, DType dtype)
    : dtype_(dtype), numel_(host.size()) {
  const std::vector<unsigned char> bytes =
      dispatch_dtype(dtype, [&](auto tag) { return encode<decltype(tag)>(host); });
  storage_ = std::make_shared<DeviceBuffer<unsigned char>>(bytes);
}

DeviceTensor DeviceTensor::concatenated(const std::vector<const DeviceTensor*>& parts) {
  DeviceTensor out;
  if (parts.empty()) return out;
  out.dtype_ = parts.front()->dtype_;
  std::size_t bytes = 0;
  for (const DeviceTensor* p : parts) {
    if (p->dtype_ != out.dtype_) {
      throw InvalidArgument(std::string("DeviceTensor: cannot concatenate ") +
                            dtype_name(p->dtype_) + " with " + dtype_name(out.dtype_));
    }
    out.numel_ += p->numel_;
    bytes += p->bytes();
  }
  out.storage_ = std::make_shared<DeviceBuffer<unsigned char>>(bytes);
  std::size_t at = 0;
  for (const DeviceTensor* p : parts) {
    if (p->bytes() > 0) {
      CUDA_CHECK(cudaMemcpy(out.storage_->get() + at, p->storage_->get(), p->bytes(),
                            cudaMemcpyDeviceToDevice));
    }
    at += p->bytes();
  }
  return out;
}

DeviceTensor DeviceTensor::streamed(const std::vector<Segment>& segments, std::size_t cols,
                                    DType dtype, const std::string& what) {
  DeviceTensor out;
  out.dtype_ = dtype;
  for (const Segment& s : segments) out.numel_ += s.rows * cols;
  out.storage_ = std::make_shared<DeviceBuffer<unsigned char>>(out.bytes());
  if (cols == 0) return out;
  const std::size_t chunk_rows = std::max<std::size_t>(1, kUploadChunkElements / cols);
  const std::size_t element = static_cast<std::size_t>(dtype_bytes(dtype));
  std::size_t at = 0;  // elements uploaded so far
  for (const Segment& s : segments) {
    for (std::size_t r = 0; r < s.rows; r += chunk_rows) {
      const std::size_t count = std::min(chunk_rows, s.rows - r) * cols;
      const std::vector<float> values = s.read(r * cols, count);
      if (values.size() != count) {
        throw InvalidArgument("DeviceModel: " + what + ": a read of " + std::to_string(count) +
                              " values at " + std::to_string(r * cols) + " returned " +
                              std::to_string(values.size()));
      }
      const std::vector<unsigned char> bytes =
          dispatch_dtype(dtype, [&](auto tag) { return encode<decltype(tag)>(values); });
      CUDA_CHECK(cudaMemcpy(out.storage_->get() + at * element, bytes.data(), bytes.size(),
                            cudaMemcpyHostToDevice));
      at += count;
    }
  }
  return out;
}

std::vector<float> DeviceTensor::to_host_floats() const {
  if (!storage_) return {};
  const std::vector<unsigned char> bytes = storage_->to_host();
  return dispatch_dtype(dtype_, [&](auto tag) { return decode<decltype(tag)>(bytes); });
}

void DeviceTensor::check_type(DType requested) const {
  if (requested != dtype_) {
    throw InvalidArgument(std::string("DeviceTensor: requested as ") + dtype_name(requested) +
                          " but stored as " + dtype_name(dtype_));
  }
}

// ---------------------------------------------------------------------------------------------
// DenseLinear

DenseLinear::DenseLinear(DeviceTensor weight, int out_features, int in_features)
    : weight_(std::move(weight)), out_(out_features), in_(in_features) {
  if (out_features < 1 || in_features < 1 ||
      weight_.numel() != static_cast<std::size_t>(out_features) * in_features) {
    throw InvalidArgument("DenseLinear: a (" + std::to_string(out_features) + ", " +
                          std::to_string(in_features) + ") weight cannot hold " +
                          std::to_string(weight_.numel()) + " elements");
  }
}

void DenseLinear::apply(const void* x, DType x_type, void* y, DType y_type, int rows,
                        cudaStream_t stream, Epilogue epilogue) const {
  dispatch_dtype(weight_.dtype(), [&](auto tag) {
    using T = decltype(tag);
    dispatch_linear_io(x_type, y_type, [&](auto a, auto o) {
      using A = decltype(a);
      using O = decltype(o);
      launch_linear<T, A, O>(weight_.data<T>(), static_cast<const A*>(x), static_cast<O*>(y),
                             rows, out_, in_, stream, epilogue);
    });
  });
}

std::unique_ptr<DeviceLinear> DenseLinear::stacked_with(
    const std::vector<const DeviceLinear*>& below) const {
  std::vector<const DeviceTensor*> parts = {&weight_};
  int rows = out_;
  for (const DeviceLinear* b : below) {
    const auto* d = dynamic_cast<const DenseLinear*>(b);
    if (d == nullptr || d->in_ != in_ || d->weight_.dtype() != weight_.dtype()) return nullptr;
    parts.push_back(&d->weight_);
    rows += d->out_;
  }
  return std::make_unique<DenseLinear>(DeviceTensor::concatenated(parts), rows, in_);
}

// ---------------------------------------------------------------------------------------------
// DeviceLayer

std::vector<const DeviceLinear*> DeviceLayer::linears() const {
  std::vector<const DeviceLinear*> out;
  for (const auto* p : {&wqkv, &wq, &wk, &wv, &wo, &w13, &w1, &w2, &w3}) {
    if (*p) out.push_back(p->get());
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// DeviceModel

namespace {
// A Model's tensors as a TensorSource (the linear weights only when no factory replaces them).
const std::vector<float>& model_tensor(const Model& model, const std::string& name, int layer) {
  if (layer < 0) {
    if (name == "token_embedding") return model.token_embedding;
    if (name == "final_norm") return model.final_norm;
    return model.classifier;
  }
  const LayerWeights& w = model.layers.at(static_cast<std::size_t>(layer));
  if (name == "attn_norm") return w.attn_norm;
  if (name == "ffn_norm") return w.ffn_norm;
  if (name == "bq") return w.bq;
  if (name == "bk") return w.bk;
  if (name == "bv") return w.bv;
  return layer_linear(w, name);
}

DeviceModel::TensorSource model_source(const Model& model) {
  return [&model](const std::string& name, int layer, std::size_t offset, std::size_t count) {
    const std::vector<float>& t = model_tensor(model, name, layer);
    if (offset > t.size() || count > t.size() - offset) return std::vector<float>();
    return std::vector<float>(t.begin() + std::ptrdiff_t(offset),
                              t.begin() + std::ptrdiff_t(offset + count));
  };
}
}  // namespace

DeviceModel::TensorSource whole_tensor_source(WholeTensorFn make) {
  struct Last {
    std::string name;
    int layer = -2;
    std::vector<float> values;
  };
  auto last = std::make_shared<Last>();
  return [make = std::move(make), last](const std::string& name, int layer, std::size_t offset,
                                        std::size_t count) {
    if (name != last->name || layer != last->layer) {
      last->values.clear();
      last->values.shrink_to_fit();  // one whole tensor at a time
      last->values = make(name, layer);
      last->name = name;
      last->layer = layer;
    }
    const std::vector<float>& t = last->values;
    if (offset > t.size() || count > t.size() - offset) return std::vector<float>();
    return std::vector<float>(t.begin() + std::ptrdiff_t(offset),
                              t.begin() + std::ptrdiff_t(offset + count));
  };
}

DeviceModel::DeviceModel(const Model& model, DType dtype)
    : DeviceModel(model.config, dtype, model_source(model)) {}

DeviceModel::DeviceModel(const Model& model, DType dtype, const LinearFactory& make_linear)
    : DeviceModel(model.config, dtype, model_source(model), make_linear) {}

DeviceModel::DeviceModel(const ModelConfig& config, DType dtype, const TensorSource& source,
                         const LinearFactory& make_linear)
    : config_(config), dtype_(dtype) {
  const ModelConfig& c = config_;
  // Tensors are read and uploaded in ranges (DeviceTensor::streamed): the host never holds a
  // whole one in fp32.
  auto segment = [&](const char* name, int layer, std::size_t rows) {
    return DeviceTensor::Segment{rows, [&source, name, layer](std::size_t offset, std::size_t count) {
                                   return source(name, layer, offset, count);
                                 }};
  };
  auto where = [](const char* name, int layer) {
    return std::string("tensor '") + name + "' of layer " + std::to_string(layer);
  };
  auto matrix = [&](const char* name, int layer, std::size_t rows, std::size_t cols) {
    return DeviceTensor::streamed({segment(name, layer, rows)}, cols, dtype, where(name, layer));
  };
  auto tensor = [&](const char* name, int layer, std::size_t numel) {
    return matrix(name, layer, 1, numel);
  };
  auto made = [&](const char* name, int l, int out, int in) -> std::unique_ptr<DeviceLinear> {
    std::unique_ptr<DeviceLinear> lin = make_linear(l, name, out, in);
    if (!lin || lin->out_features() != out || lin->in_features() != in) {
      throw InvalidArgument("DeviceModel: layer " + std::to_string(l) + " " + name + " is " +
                            (lin ? "(" + std::to_string(lin->out_features()) + ", " +
                                       std::to_string(lin->in_features()) + ")"
                                 : std::string("missing")) +
                            ", expected (" + std::to_string(out) + ", " + std::to_string(in) + ")");
    }
    return lin;
  };
  // Linears come from the factory when there is one, checked against the config, so a wrong
  // shape is one clear error here and never an out-of-bounds read in a kernel.
  auto linear = [&](const char* name, int l, int out, int in) -> std::unique_ptr<DeviceLinear> {
    if (!make_linear) {
      return std::make_unique<DenseLinear>(matrix(name, l, std::size_t(out), std::size_t(in)),
                                           out, in);
    }
    return made(name, l, out, in);
  };
  const std::size_t d = static_cast<std::size_t>(c.dim);
  // Linears that read the same input, stacked into `into` (DeviceLayer's wqkv, w13): from the
  // source, the parts streamed into one device tensor; from a factory, made one by one and
  // stacked on the device where their kind allows (else left apart in their members).
  struct Part {
    const char* name;
    int rows;
    std::unique_ptr<DeviceLinear>* member;
  };
  auto stacked = [&](int l, std::unique_ptr<DeviceLinear>& into, const std::vector<Part>& parts) {
    if (make_linear) {
      std::vector<std::unique_ptr<DeviceLinear>*> members;
      for (const Part& p : parts) {
        *p.member = made(p.name, l, p.rows, c.dim);
        members.push_back(p.member);
      }
      stack(into, members);
      return;
    }
    int rows = 0;
    std::vector<DeviceTensor::Segment> segments;
    for (const Part& p : parts) {
      rows += p.rows;
      segments.push_back(segment(p.name, l, std::size_t(p.rows)));
    }
    into = std::make_unique<DenseLinear>(
        DeviceTensor::streamed(segments, d, dtype, where(parts.front().name, l)), rows, c.dim);
  };
  token_embedding_ = tensor("token_embedding", -1, std::size_t(c.vocab_size) * d);
  layers_.resize(static_cast<std::size_t>(c.n_layers));
  for (int l = 0; l < c.n_layers; ++l) {
    DeviceLayer& w = layers_[static_cast<std::size_t>(l)];
    w.attn_norm = tensor("attn_norm", l, d);
    stacked(l, w.wqkv, {{"wq", c.q_dim(), &w.wq}, {"wk", c.kv_dim(), &w.wk},
                        {"wv", c.kv_dim(), &w.wv}});
    w.wo = linear("wo", l, c.dim, c.q_dim());
    w.ffn_norm = tensor("ffn_norm", l, d);
    stacked(l, w.w13, {{"w1", c.hidden_dim, &w.w1}, {"w3", c.hidden_dim, &w.w3}});
    w.w2 = linear("w2", l, c.dim, c.hidden_dim);
    if (c.attention_bias) {  // added in fp32 after the linear; the values are the dtype's
      auto bias = [&](const char* name, int n) {
        std::vector<float> values = source(name, l, 0, std::size_t(n));
        if (values.size() != std::size_t(n)) {
          throw InvalidArgument("DeviceModel: " + where(name, l) + " has " +
                                std::to_string(values.size()) + " values, expected " +
                                std::to_string(n));
        }
        return DeviceTensor(rounded(values, dtype), DType::kF32);
      };
      w.bq = bias("bq", c.q_dim());
      w.bk = bias("bk", c.kv_dim());
      w.bv = bias("bv", c.kv_dim());
    }
  }
  final_norm_ = tensor("final_norm", -1, d);
  // The classifier stays dense: it is not one of a block's linears (and is tied to the
  // embedding in some models).
  classifier_ = c.tied_classifier
                    ? std::make_unique<DenseLinear>(token_embedding_, c.vocab_size, c.dim)
                    : std::make_unique<DenseLinear>(
                          matrix("classifier", -1, std::size_t(c.vocab_size), d), c.vocab_size,
                          c.dim);
}

std::int64_t DeviceModel::weight_bytes() const {
  std::set<const void*> seen;
  std::int64_t total = 0;
  auto add = [&](const DeviceTensor& t) {
    if (seen.insert(t.storage_id()).second) total += static_cast<std::int64_t>(t.bytes());
  };
  auto add_linear = [&](const DeviceLinear& lin) {
    for (const DeviceTensor* t : lin.tensors()) add(*t);
    total += lin.own_bytes();
  };
  add(token_embedding_);
  for (const DeviceLayer& d : layers_) {
    add(d.attn_norm);
    add(d.ffn_norm);
    for (const DeviceTensor* b : {&d.bq, &d.bk, &d.bv}) {
      if (b->numel() > 0) add(*b);
    }
    for (const DeviceLinear* lin : d.linears()) add_linear(*lin);
  }
  add(final_norm_);
  add_linear(*classifier_);
  return total;
}

std::string DeviceModel::weight_format() const {
  const std::string storage = dtype_name(dtype_);
  for (const DeviceLayer& d : layers_) {
    for (const DeviceLinear* lin : d.linears()) {
      if (lin->format() != storage) return lin->format() + " + " + storage;
    }
  }
  return storage;
}

Model round_weights(const Model& model, DType dtype) {
  Model out = model;
  auto round_all = [&](std::vector<float>& v) { v = rounded(v, dtype); };
  round_all(out.token_embedding);
  for (LayerWeights& w : out.layers) {
    for (std::vector<float>* v : {&w.attn_norm, &w.wq, &w.wk, &w.wv, &w.wo, &w.ffn_norm, &w.w1,
                                  &w.w2, &w.w3, &w.bq, &w.bk, &w.bv}) {
      round_all(*v);
    }
  }
  round_all(out.final_norm);
  round_all(out.classifier);
  return out;
}

}  // namespace nanoserve::engine
