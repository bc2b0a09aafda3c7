#include "common/engine/model/gguf_device_model.h"

#include <algorithm>
#include <utility>

#include "common/error.h"
#include "common/loaders/ggml_types.h"

namespace nanoserve::engine {

std::optional<GgufBlockType> gguf_packed_type(std::uint32_t ggml_type) {
  switch (ggml_type) {
    case kGgmlTypeQ8_0: return GgufBlockType::kQ8_0;
    case kGgmlTypeQ4_0: return GgufBlockType::kQ4_0;
    case kGgmlTypeQ4_K: return GgufBlockType::kQ4_K;
    case kGgmlTypeQ6_K: return GgufBlockType::kQ6_K;
    default: return std::nullopt;
  }
}

// ---------------------------------------------------------------------------------------------
// GgufDeviceLinear

GgufDeviceLinear::GgufDeviceLinear(GgufBlockType type, int rows, int cols,
                                   const std::uint8_t* blocks,
                                   std::shared_ptr<DeviceBuffer<unsigned char>> scratch)
    : scratch_(std::move(scratch)) {
  if (rows < 1 || cols < 1 || cols % gguf_block_elements(type) != 0 || blocks == nullptr) {
    throw InvalidArgument("GgufDeviceLinear: a (" + std::to_string(rows) + ", " +
                          std::to_string(cols) + ") weight of " +
                          std::to_string(gguf_block_elements(type)) +
                          "-element blocks needs positive sizes, whole blocks per row and data");
  }
  view_.rows = rows;
  view_.cols = cols;
  view_.type = type;
  const std::size_t bytes = static_cast<std::size_t>(rows) * view_.row_bytes();
  blocks_ = DeviceBuffer<std::uint8_t>(bytes);
  CUDA_CHECK(cudaMemcpy(blocks_.get(), blocks, bytes, cudaMemcpyHostToDevice));
  view_.blocks = blocks_.get();
}

void GgufDeviceLinear::apply(const void* x, DType x_type, void* y, DType y_type, int rows,
                             cudaStream_t stream, Epilogue epilogue) const {
  if (y_type != x_type) {  // the kernels are built for O = A only (kernels/gguf_linear.h)
    throw InvalidArgument(std::string("GgufDeviceLinear: writes its activation type (") +
                          dtype_name(x_type) + "), not " + dtype_name(y_type) +
                          " (fp32 logits come from the classifier, which stays dense)");
  }
  dispatch_linear_io(x_type, y_type, [&](auto a, auto) {
    using A = decltype(a);
    using O = A;
    A* scratch = scratch_ ? reinterpret_cast<A*>(scratch_->get()) : nullptr;
    const std::size_t scratch_elements = scratch_ ? scratch_->size() / sizeof(A) : 0;
    launch_gguf_linear<A, O>(view_, static_cast<const A*>(x), static_cast<O*>(y), rows, scratch,
                             scratch_elements, stream, epilogue);
  });
}

std::string GgufDeviceLinear::format() const {
  switch (view_.type) {
    case GgufBlockType::kQ8_0: return "gguf-q8_0";
    case GgufBlockType::kQ4_0: return "gguf-q4_0";
    case GgufBlockType::kQ4_K: return "gguf-q4_k";
    case GgufBlockType::kQ6_K: return "gguf-q6_k";
  }
  return "gguf";
}

std::unique_ptr<DeviceLinear> GgufDeviceLinear::stacked_with(
    const std::vector<const DeviceLinear*>& below) const {
  std::vector<const GgufDeviceLinear*> parts = {this};
  for (const DeviceLinear* b : below) {
    const auto* g = dynamic_cast<const GgufDeviceLinear*>(b);
    if (g == nullptr || g->view_.type != view_.type || g->view_.cols != view_.cols) return nullptr;
    parts.push_back(g);
  }
  std::unique_ptr<GgufDeviceLinear> out(new GgufDeviceLinear());
  out->view_ = view_;
  out->view_.rows = 0;
  for (const GgufDeviceLinear* p : parts) out->view_.rows += p->view_.rows;
  out->blocks_ = DeviceBuffer<std::uint8_t>(static_cast<std::size_t>(out->view_.rows) *
                                            view_.row_bytes());
  std::size_t at = 0;  // rows are whole blocks: stacking is concatenation
  for (const GgufDeviceLinear* p : parts) {
    CUDA_CHECK(cudaMemcpy(out->blocks_.get() + at, p->blocks_.get(), p->blocks_.bytes(),
                          cudaMemcpyDeviceToDevice));
    at += p->blocks_.bytes();
  }
  out->view_.blocks = out->blocks_.get();
  out->scratch_ = scratch_;
  return out;
}

// ---------------------------------------------------------------------------------------------
// Whole models

namespace {
/// The largest linear of a block as stacked by DeviceModel (wqkv, wo, w13, w2), in elements:
/// what the GEMM path's scratch must hold.
std::size_t largest_linear(const ModelConfig& c) {
  const std::size_t d = std::size_t(c.dim);
  return std::max({(std::size_t(c.q_dim()) + 2 * std::size_t(c.kv_dim())) * d,
                   d * std::size_t(c.q_dim()), 2 * std::size_t(c.hidden_dim) * d,
                   d * std::size_t(c.hidden_dim)});
}

/// The fp32 weights of linear `name` of a block.
std::vector<float>& linear_of(LayerWeights& w, const std::string& name) {
  for (auto [n, member] : {std::pair{"wq", &LayerWeights::wq}, {"wk", &LayerWeights::wk},
                           {"wv", &LayerWeights::wv}, {"wo", &LayerWeights::wo},
                           {"w1", &LayerWeights::w1}, {"w2", &LayerWeights::w2},
                           {"w3", &LayerWeights::w3}}) {
    if (name == n) return w.*member;
  }
  throw InvalidArgument("gguf_device_model: no linear layer named '" + name + "'");
}

constexpr const char* kLinearNames[] = {"wq", "wk", "wv", "wo", "w1", "w2", "w3"};
}  // namespace

DeviceModel make_gguf_device_model(const GgufCheckpointReader& reader, DType dtype,
                                   bool keep_packed) {
  const ModelConfig& c = reader.config();
  auto source = [&reader](const std::string& name, int layer, std::size_t offset,
                          std::size_t count) { return reader.read(name, layer, offset, count); };
  // One scratch for the GEMM path of every packed layer, allocated here — never inside a step
  // (a CUDA graph capture cannot allocate).
  std::shared_ptr<DeviceBuffer<unsigned char>> scratch;
  auto make_linear = [&](int layer, const std::string& name, int out,
                         int in) -> std::unique_ptr<DeviceLinear> {
    const GgufTensorInfo& t = reader.tensor(name, layer);
    const std::optional<GgufBlockType> packed = gguf_packed_type(t.type->id);
    if (keep_packed && packed) {
      if (!scratch) {
        scratch = std::make_shared<DeviceBuffer<unsigned char>>(
            largest_linear(c) * static_cast<std::size_t>(dtype_bytes(dtype)));
      }
      const std::uint8_t* stored = reader.stored(t);
      auto lin = std::make_unique<GgufDeviceLinear>(*packed, out, in, stored, scratch);
      reader.release(stored, t.n_bytes);
      return lin;
    }
    DeviceTensor w = DeviceTensor::streamed(
        {{std::size_t(out),
          [&](std::size_t offset, std::size_t count) { return source(name, layer, offset, count); }}},
        std::size_t(in), dtype, t.name);
    return std::make_unique<DenseLinear>(std::move(w), out, in);
  };
  return DeviceModel(c, dtype, source, make_linear);
}

Model gguf_oracle_model(const GgufCheckpointReader& reader, DType dtype) {
  Model exact = reader.model();
  Model m = round_weights(exact, dtype);
  for (int l = 0; l < exact.config.n_layers; ++l) {
    for (const char* name : kLinearNames) {
      if (gguf_packed_type(reader.tensor(name, l).type->id)) {
        linear_of(m.layers[size_t(l)], name) =
            linear_of(exact.layers[size_t(l)], name);
      }
    }
  }
  return m;
}

}  // namespace nanoserve::engine
