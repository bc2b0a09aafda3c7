#include "common/engine/model/quantized_device_model.h"

#include <memory>

#include "common/error.h"
#include "kernels/qlinear.h"

namespace nanoserve::engine {

// ---------------------------------------------------------------------------------------------
// QuantizedDeviceLinear

QuantizedDeviceLinear::QuantizedDeviceLinear(const quant::QuantizedLinear& q) {
  try {
    q.validate("QuantizedDeviceLinear", "weight");
  } catch (const LoadError& e) {
    throw InvalidArgument(e.what());
  }
  qweight_ = DeviceBuffer<std::uint8_t>(q.qweight);
  scales_ = DeviceBuffer<std::uint16_t>(q.scales);
  zeros_ = DeviceBuffer<std::uint16_t>(q.zeros);
  g_idx_ = DeviceBuffer<std::int32_t>(q.g_idx);
  rows_ = q.rows;
  cols_ = q.cols;
  bits_ = q.scheme.bits;
  group_width_ = q.scheme.group_width(q.cols);  // the view has no "0 = per channel"
  format_ = q.scheme.label() + (q.g_idx.empty() ? "" : "-act");
  host_g_idx_ = q.g_idx;
}

namespace {
// The buffers' elements end to end in a new buffer (device-to-device copies).
template <typename T>
DeviceBuffer<T> concatenated(const std::vector<const DeviceBuffer<T>*>& parts) {
  std::size_t n = 0;
  for (const DeviceBuffer<T>* p : parts) n += p->size();
  DeviceBuffer<T> out(n);
  std::size_t at = 0;
  for (const DeviceBuffer<T>* p : parts) {
    if (p->size() > 0) {
      CUDA_CHECK(cudaMemcpy(out.get() + at, p->get(), p->bytes(), cudaMemcpyDeviceToDevice));
    }
    at += p->size();
  }
  return out;
}
}  // namespace

std::unique_ptr<DeviceLinear> QuantizedDeviceLinear::stacked_with(
    const std::vector<const DeviceLinear*>& below) const {
  std::vector<const QuantizedDeviceLinear*> parts = {this};
  for (const DeviceLinear* b : below) {
    const auto* q = dynamic_cast<const QuantizedDeviceLinear*>(b);
    if (q == nullptr || q->cols_ != cols_ || q->bits_ != bits_ ||
        q->group_width_ != group_width_ || q->format_ != format_ ||
        (q->zeros_.size() == 0) != (zeros_.size() == 0) || q->host_g_idx_ != host_g_idx_) {
      return nullptr;
    }
    parts.push_back(q);
  }
  std::unique_ptr<QuantizedDeviceLinear> out(new QuantizedDeviceLinear());
  std::vector<const DeviceBuffer<std::uint8_t>*> codes;
  std::vector<const DeviceBuffer<std::uint16_t>*> scales, zeros;
  for (const QuantizedDeviceLinear* p : parts) {
    codes.push_back(&p->qweight_);
    scales.push_back(&p->scales_);
    zeros.push_back(&p->zeros_);
    out->rows_ += p->rows_;
  }
  out->qweight_ = concatenated(codes);  // rows of whole bytes: the row pitch does not change
  out->scales_ = concatenated(scales);
  out->zeros_ = concatenated(zeros);
  out->g_idx_ = DeviceBuffer<std::int32_t>(host_g_idx_);
  out->cols_ = cols_;
  out->bits_ = bits_;
  out->group_width_ = group_width_;
  out->format_ = format_;
  out->host_g_idx_ = host_g_idx_;
  return out;
}

QuantizedWeightView QuantizedDeviceLinear::view() const {
  QuantizedWeightView v;
  v.qweight = qweight_.get();
  // fp16 bit patterns, uploaded as they are stored; __half has the same size and layout.
  v.scales = reinterpret_cast<const __half*>(scales_.get());
  v.zeros = reinterpret_cast<const __half*>(zeros_.get());  // null when symmetric
  v.g_idx = g_idx_.get();                                   // null without act-order
  v.rows = rows_;
  v.cols = cols_;
  v.bits = bits_;
  v.group_size = group_width_;
  return v;
}

void QuantizedDeviceLinear::apply(const void* x, DType x_type, void* y, DType y_type, int rows,
                                  cudaStream_t stream, Epilogue epilogue) const {
  dispatch_linear_io(x_type, y_type, [&](auto a, auto o) {
    using A = decltype(a);
    using O = decltype(o);
    launch_quant_linear<A, O>(view(), static_cast<const A*>(x), static_cast<O*>(y), rows, stream,
                              epilogue);
  });
}

std::int64_t QuantizedDeviceLinear::own_bytes() const {
  return static_cast<std::int64_t>(qweight_.bytes() + scales_.bytes() + zeros_.bytes() +
                                   g_idx_.bytes());
}

// ---------------------------------------------------------------------------------------------
// Whole models

namespace {
/// The LinearId named `name` ("wq" … "w3", the names DeviceModel's factory passes).
quant::LinearId linear_id(const std::string& name) {
  for (quant::LinearId id : quant::kLinearIds) {
    if (name == quant::to_string(id)) return id;
  }
  throw InvalidArgument("make_quantized_device_model: no linear layer named '" + name + "'");
}
}  // namespace

DeviceModel make_quantized_device_model(const quant::QuantizedModel& q, DType dtype) {
  q.validate(q.base.source.empty() ? "(quantized model)" : q.base.source);
  return DeviceModel(q.base, dtype, [&q](int layer, const std::string& name, int, int) {
    return std::make_unique<QuantizedDeviceLinear>(
        q.layers.at(static_cast<std::size_t>(layer))[linear_id(name)]);
  });
}

Model quantized_oracle_model(const quant::QuantizedModel& q, DType dtype) {
  Model m = round_weights(q.base, dtype);  // the linears are empty here: nothing to round
  for (std::size_t l = 0; l < q.layers.size() && l < m.layers.size(); ++l) {
    for (quant::LinearId id : quant::kLinearIds) {
      quant::linear_weights(m.layers[l], id) = q.layers[l][id].dequantize();
    }
  }
  return m;
}

}  // namespace nanoserve::engine
