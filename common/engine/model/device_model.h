#pragma once
/// \file
/// \brief `DeviceModel`: a `Model`'s weights uploaded to the device in one storage type
/// (fp32, fp16 or bf16; `--dtype`) — llama2.c's `TransformerWeights`, on the GPU.
///
/// Every tensor is rounded once, to nearest even, from the fp32 host weights; the norm gains
/// too, so a fp16 model really is fp16 end to end (activations stay fp32: docs/design.md,
/// "Numbers and precision"). A tied classifier shares the embedding's device memory, as in the
/// file.
///
/// The linear layers sit behind `DeviceLinear`, so the quantization chapter can swap a layer's
/// dense weights for packed INT8/INT4 ones without touching the forward pass.
///
/// Linears that read the same input are stacked row-wise at load, so the forward pass makes one
/// launch where the checkpoint has two or three (kernels/README.md, "Fusions"):
///
///     wqkv (q_dim + 2·kv_dim, dim) = [Wq; Wk; Wv]   one QKV projection; each row of its output
///                                                   is q | k | v, read as three views
///     w13  (2·hidden, dim)         = [W1; W3]       gate over up, applied with
///                                                   Epilogue::kSwiGLU: y = silu(x W1ᵀ) ⊙ x W3ᵀ
///
/// Stacking changes no number: every output row of W is the same dot product, summed in the
/// same order, as in the separate matrix.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/model.h"
#include "kernels/device_buffer.h"
#include "common/error.h"
#include "kernels/dtype.cuh"
#include "kernels/linear_common.cuh"

namespace nanoserve::engine {

/// \brief A device array of `numel` values in a run-time storage type. Copies share the same
/// device memory (a tied classifier is the embedding table, not a copy of it).
///
/// \par Example
/// \snippet tests/ch01/test_examples_model.cpp DeviceTensor
class DeviceTensor {
 public:
  /// \brief An empty tensor.
  DeviceTensor() = default;
  /// \brief Rounds `host` (fp32) to `dtype` and uploads it.
  DeviceTensor(const std::vector<float>& host, DType dtype);

  /// \brief Storage type of the elements.
  DType dtype() const { return dtype_; }
  /// \brief Number of elements.
  std::size_t numel() const { return numel_; }
  /// \brief Device bytes of the elements.
  std::size_t bytes() const { return numel_ * static_cast<std::size_t>(dtype_bytes(dtype_)); }
  /// \brief Identity of the device memory (equal for tensors that share it).
  const void* storage_id() const { return storage_.get(); }
  /// \brief Typed device pointer; throws `InvalidArgument` when T is not the storage type.
  template <typename T>
  const T* data() const {
    check_type(dtype_of<T>());
    return reinterpret_cast<const T*>(storage_ ? storage_->get() : nullptr);
  }
  /// \brief The values back on the host, widened to fp32 (tests and debugging).
  std::vector<float> to_host_floats() const;
  /// \brief A new tensor holding `parts`' elements one after another (a device-to-device copy).
  /// Throws `InvalidArgument` unless every part has the same storage type.
  static DeviceTensor concatenated(const std::vector<const DeviceTensor*>& parts);

  /// \brief Reads fp32 values `[offset, offset + count)` of a host tensor.
  using RangeReader = std::function<std::vector<float>(std::size_t offset, std::size_t count)>;
  /// \brief `rows` rows of a matrix whose values `read` produces (offsets within the segment).
  struct Segment {
    std::size_t rows = 0;  ///< rows of this segment
    RangeReader read;      ///< its values, in ranges of whole rows
  };
  /// \brief A (Σ rows, `cols`) tensor in `dtype` made of `segments` stacked row-wise, read and
  /// uploaded in ranges of whole rows of at most `kUploadChunkElements` elements (one row when a
  /// row is longer): the host holds one range in fp32 and its encoding, never a whole tensor —
  /// Llama-3.1-8B's embedding is 2.1 GB in fp32. Throws `InvalidArgument` naming `what` when a
  /// read returns the wrong number of values.
  static DeviceTensor streamed(const std::vector<Segment>& segments, std::size_t cols, DType dtype,
                               const std::string& what);
  /// \brief Most elements `streamed` asks a reader for at once (4 Mi: 16 MB of fp32).
  static constexpr std::size_t kUploadChunkElements = std::size_t(1) << 22;

 private:
  void check_type(DType requested) const;
  DType dtype_ = DType::kF32;
  std::size_t numel_ = 0;
  std::shared_ptr<DeviceBuffer<unsigned char>> storage_;
};

/// \brief Calls `f(A{}, O{})` with A the C++ type of `x_type` and O that of `y_type`, for the
/// pairs a linear layer supports: O = A (activations between kernels) or O = float (fp32
/// logits from any activation type). Throws `InvalidArgument` for any other pair.
template <typename F>
void dispatch_linear_io(DType x_type, DType y_type, F&& f) {
  if (y_type != x_type && y_type != DType::kF32) {
    throw InvalidArgument(std::string("linear: ") + dtype_name(x_type) + " activations cannot " +
                          "produce " + dtype_name(y_type) + " outputs (only " +
                          dtype_name(x_type) + " or fp32)");
  }
  dispatch_dtype(x_type, [&](auto a) {
    using A = decltype(a);
    if (y_type == DType::kF32) {
      f(a, float{});
    } else {
      f(a, A{});
    }
  });
}

/// \brief One linear layer `y = W x` on the device, for any number of input rows.
///
/// The forward pass only calls `apply`; what W looks like in memory is the implementation's
/// business (dense here, group-quantized in chapter 5).
///
/// \par Example
/// \snippet tests/ch01/test_examples_model.cpp DenseLinear
class DeviceLinear {
 public:
  virtual ~DeviceLinear() = default;
  /// \brief `Y = X Wᵀ` (kStore) or `Y += X Wᵀ` (kAccumulate) on `stream`, the activations
  /// type-erased (one virtual for every activation type; the kernels are templates on it).
  /// \param x        (rows, in_features) device activations in `x_type`
  /// \param x_type   storage type of x
  /// \param y        (rows, out_features) device outputs in `y_type`; must not alias x
  /// \param y_type   `x_type`, or kF32 (the classifier's logits); see dispatch_linear_io
  /// \param rows     input rows (tokens)
  /// \param stream   CUDA stream
  /// \param epilogue store or accumulate (accumulate: one rounding of the sum to `y_type`)
  virtual void apply(const void* x, DType x_type, void* y, DType y_type, int rows,
                     cudaStream_t stream, Epilogue epilogue) const = 0;
  /// \brief fp32 activations in and out: `apply(x, kF32, y, kF32, …)`.
  void apply(const float* x, float* y, int rows, cudaStream_t stream, Epilogue epilogue) const {
    apply(x, DType::kF32, y, DType::kF32, rows, stream, epilogue);
  }
  /// \brief Rows of W (length of y).
  virtual int out_features() const = 0;
  /// \brief Columns of W (length of x).
  virtual int in_features() const = 0;
  /// \brief The device tensors holding W (for byte accounting; shared ones counted once).
  virtual std::vector<const DeviceTensor*> tensors() const = 0;
  /// \brief Device bytes the layer holds outside `tensors()`, never shared with another layer
  /// (a quantized layer's packed codes, scales and zero points).
  virtual std::int64_t own_bytes() const { return 0; }
  /// \brief A short description of the weight format, e.g. "fp16".
  virtual std::string format() const = 0;
  /// \brief One layer holding this layer's rows with the rows of each of `below` under them, in
  /// order (W = [this; below…]: how `DeviceModel` makes wqkv and w13), or null when they cannot
  /// be one matrix — another kind or format, a different in_features, a different act-order.
  /// The parts are not changed; the result owns copies.
  virtual std::unique_ptr<DeviceLinear> stacked_with(
      const std::vector<const DeviceLinear*>& below) const {
    (void)below;
    return nullptr;
  }
};

/// \brief A dense (out_features, in_features) row-major weight in a storage type, applied with
/// `launch_linear` (GEMV for a few rows, GEMM beyond).
///
/// \par Example
/// \snippet tests/ch01/test_examples_model.cpp DenseLinear
class DenseLinear final : public DeviceLinear {
 public:
  /// \brief Uses `weight` (out_features × in_features elements) as W.
  DenseLinear(DeviceTensor weight, int out_features, int in_features);
  using DeviceLinear::apply;
  /// \brief See `DeviceLinear::apply`.
  void apply(const void* x, DType x_type, void* y, DType y_type, int rows, cudaStream_t stream,
             Epilogue epilogue) const override;
  /// \brief Rows of W.
  int out_features() const override { return out_; }
  /// \brief Columns of W.
  int in_features() const override { return in_; }
  /// \brief The one weight tensor.
  std::vector<const DeviceTensor*> tensors() const override { return {&weight_}; }
  /// \brief The storage type's name ("fp32", "fp16", "bf16").
  std::string format() const override { return dtype_name(weight_.dtype()); }
  /// \brief One DenseLinear over the weights stacked in a new tensor, when every part below is a
  /// DenseLinear of the same storage type and in_features; else null.
  std::unique_ptr<DeviceLinear> stacked_with(
      const std::vector<const DeviceLinear*>& below) const override;

 private:
  DeviceTensor weight_;
  int out_;
  int in_;
};

/// \brief One transformer block's weights on the device (shapes as in `LayerWeights`).
///
/// The projections that share an input are stacked (`wqkv`, `w13`; see the file comment); the
/// separate members are set only when a `LinearFactory`'s layers could not be stacked
/// (`DeviceLinear::stacked_with` gave null), and the forward pass then runs them one by one.
///
/// \par Example
/// \snippet tests/ch01/test_examples_model.cpp DeviceLayer
struct DeviceLayer {
  DeviceTensor attn_norm;               ///< (dim) RMSNorm gain before attention
  std::unique_ptr<DeviceLinear> wqkv;   ///< (q_dim + 2·kv_dim, dim) = [Wq; Wk; Wv], or null
  std::unique_ptr<DeviceLinear> wq;     ///< (q_dim, dim), null when in wqkv
  std::unique_ptr<DeviceLinear> wk;     ///< (kv_dim, dim), null when in wqkv
  std::unique_ptr<DeviceLinear> wv;     ///< (kv_dim, dim), null when in wqkv
  std::unique_ptr<DeviceLinear> wo;     ///< (dim, q_dim)
  DeviceTensor ffn_norm;                ///< (dim) RMSNorm gain before the FFN
  std::unique_ptr<DeviceLinear> w13;    ///< (2·hidden_dim, dim) = [W1; W3], or null
  std::unique_ptr<DeviceLinear> w1;     ///< (hidden_dim, dim) gate, null when in w13
  std::unique_ptr<DeviceLinear> w2;     ///< (dim, hidden_dim) down
  std::unique_ptr<DeviceLinear> w3;     ///< (hidden_dim, dim) up, null when in w13
  /// \brief (q_dim) q bias, fp32 holding the storage type's rounded values; empty unless the
  /// config has `attention_bias` (Qwen2). Likewise `bk` and `bv` (kv_dim).
  DeviceTensor bq;
  DeviceTensor bk;  ///< (kv_dim) k bias, see `bq`
  DeviceTensor bv;  ///< (kv_dim) v bias, see `bq`

  /// \brief Every linear layer the block holds (stacked or not), in forward order.
  std::vector<const DeviceLinear*> linears() const;
};

/// \brief Makes the device form of one linear layer of block `layer`: `name` is its
/// `LayerWeights` member ("wq", "wk", "wv", "wo", "w1", "w2" or "w3"), W is
/// (`out_features`, `in_features`).
using LinearFactory = std::function<std::unique_ptr<DeviceLinear>(
    int layer, const std::string& name, int out_features, int in_features)>;

/// \brief A whole decoder's weights on the device, in one storage type.
///
/// \par Example
/// \snippet tests/ch01/test_examples_model.cpp DeviceModel
class DeviceModel {
 public:
  /// \brief Uploads every tensor of `model` (which must have passed `Model::validate()`),
  /// rounded to `dtype`. Throws `CudaError` when device memory runs out.
  DeviceModel(const Model& model, DType dtype);
  /// \brief Uploads the embedding, norms and classifier of `model` rounded to `dtype`, and
  /// takes every block's seven linear layers from `make_linear` — how chapter 5 puts quantized
  /// linears in (engine/quantized_device_model.h) — then stacks wq, wk, wv and w1, w3 where
  /// they allow it (`DeviceLinear::stacked_with`). The model's linear weight vectors are not
  /// read (a quantized model's fp32 base has none). Throws `InvalidArgument` when a made layer
  /// is null or its shape is not the config's.
  DeviceModel(const Model& model, DType dtype, const LinearFactory& make_linear);

  /// \brief Where a tensor's fp32 values come from: `(name, layer, offset, count)` → the values
  /// `[offset, offset + count)` of the tensor (row-major), with `name` one of the `LayerWeights`
  /// / `Model` field names ("wq", …, "bq", "bk", "bv" with `attention_bias`,
  /// "token_embedding", "final_norm", "classifier") and `layer` -1 for model-wide tensors.
  /// Ranges always cover whole rows.
  using TensorSource = std::function<std::vector<float>(const std::string& name, int layer,
                                                        std::size_t offset, std::size_t count)>;
  /// \brief Uploads the tensors of a model with `config` as `source` produces them, rounded to
  /// `dtype`, in ranges of at most `DeviceTensor::kUploadChunkElements` (`DeviceTensor::streamed`):
  /// the host holds one range in fp32 and its encoding, so an 8B-parameter model loads with a
  /// few tens of MB of host memory beyond the device copy instead of 32 GB (docs/design.md,
  /// "What the loaders read"). With `make_linear`, the blocks' linears come from it instead of
  /// `source`. Throws `InvalidArgument` when `source` returns the wrong number of values or a
  /// made linear is null or misshapen.
  DeviceModel(const ModelConfig& config, DType dtype, const TensorSource& source,
              const LinearFactory& make_linear = {});

  /// \brief Shapes and hyper-parameters (a copy of the host model's).
  const ModelConfig& config() const { return config_; }
  /// \brief Storage type the weights were uploaded in.
  DType dtype() const { return dtype_; }
  /// \brief (vocab_size, dim) token embedding table.
  const DeviceTensor& token_embedding() const { return token_embedding_; }
  /// \brief Block `l` (0-based).
  const DeviceLayer& layer(int l) const { return layers_.at(static_cast<std::size_t>(l)); }
  /// \brief Block `l`, to replace its linear layers (e.g. with quantized ones).
  DeviceLayer& mutable_layer(int l) { return layers_.at(static_cast<std::size_t>(l)); }
  /// \brief (dim) final RMSNorm gain.
  const DeviceTensor& final_norm() const { return final_norm_; }
  /// \brief (vocab_size, dim) output projection (the embedding table when tied).
  const DeviceLinear& classifier() const { return *classifier_; }
  /// \brief Device bytes of all weights, each device allocation counted once.
  std::int64_t weight_bytes() const;
  /// \brief What the weights are stored as: the storage type ("fp16") when every linear layer
  /// uses it, else the linears' format and the storage type of the rest
  /// ("int4-g128-sym + fp32").
  std::string weight_format() const;

 private:
  ModelConfig config_;
  DType dtype_;
  DeviceTensor token_embedding_;
  std::vector<DeviceLayer> layers_;
  DeviceTensor final_norm_;
  std::unique_ptr<DeviceLinear> classifier_;
};

/// \brief Produces one whole tensor's fp32 values: `(name, layer)` as in `TensorSource`.
using WholeTensorFn = std::function<std::vector<float>(const std::string& name, int layer)>;

/// \brief A `TensorSource` over a function that can only make whole tensors (a synthetic
/// model's generator): it keeps the last tensor made and serves its ranges from it, so the host
/// holds one whole tensor at a time (fine for generated weights; checkpoint readers read ranges).
DeviceModel::TensorSource whole_tensor_source(WholeTensorFn make);

/// \brief `model` with every weight rounded to `dtype` and widened back to fp32: exactly the
/// numbers a `DeviceModel(model, dtype)` computes with. The oracle run on it sees the same
/// weights as the kernels, so a comparison measures the kernels (and the KV cache's storage
/// type), not the weight rounding.
Model round_weights(const Model& model, DType dtype);

}  // namespace nanoserve::engine
