#pragma once
/// \file
/// \brief Chapter 5 on the device: a weight-only quantized linear layer behind the
/// `DeviceLinear` seam, and a `DeviceModel` built from a `quant::QuantizedModel` — so the
/// normal `ModelRunner`, `NaiveDecoder` and `generate()` run W8A16 / W4A16 unchanged.
///
/// What reaches the device, per linear layer (the arrays of `quant::QuantizedLinear`, uploaded
/// byte for byte; the kernels see them through `QuantizedWeightView`, kernels/qlinear_common.cuh):
///
///     qweight  (rows, row_bytes)  uint8   packed codes (INT4: two per byte)
///     scales   (rows, groups)     fp16    one per (row, group)
///     zeros    (rows, groups)     fp16    asymmetric only
///     g_idx    (cols)             int32   GPTQ act-order only
///
/// `apply` is `launch_quant_linear`: the quantized GEMV for up to 16 rows (decode), the
/// quantized GEMM beyond (prefill). Everything else of the model — embedding, norms, classifier,
/// and the KV cache — is stored in the `DeviceModel`'s storage type, exactly as for a dense
/// model (quantized_model.h says why those stay unquantized).
///
/// The kernels multiply the same fp32 numbers as the oracle run on the dequantized weights
/// (`s · (q − z)` is exact in fp32), so `quantized_oracle_model` is the oracle's side of every
/// comparison: only the order of the additions differs.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/engine/model/device_model.h"
#include "common/quant/quantized_model.h"
#include "kernels/device_buffer.h"
#include "kernels/qlinear_common.cuh"

namespace nanoserve::engine {

/// \brief A weight-only quantized linear layer W (rows, cols) on the device, applied with
/// `launch_quant_linear`.
///
/// \par Example
/// \snippet tests/ch05/test_examples_quantized.cpp QuantizedDeviceLinear
class QuantizedDeviceLinear final : public DeviceLinear {
 public:
  /// \brief Uploads `q`'s arrays as they are stored. Throws `InvalidArgument` when `q` fails
  /// `QuantizedLinear::validate` (a kernel must never read past a short array).
  explicit QuantizedDeviceLinear(const quant::QuantizedLinear& q);

  using DeviceLinear::apply;
  /// \brief See `DeviceLinear::apply`: fp16/bf16 activations make this a true W8A16 / W4A16
  /// layer.
  void apply(const void* x, DType x_type, void* y, DType y_type, int rows, cudaStream_t stream,
             Epilogue epilogue) const override;
  /// \brief Rows of W.
  int out_features() const override { return rows_; }
  /// \brief Columns of W.
  int in_features() const override { return cols_; }
  /// \brief None: the arrays are not `DeviceTensor`s (see `own_bytes`).
  std::vector<const DeviceTensor*> tensors() const override { return {}; }
  /// \brief Bytes of codes, scales, zero points and g_idx on the device.
  std::int64_t own_bytes() const override;
  /// \brief The scheme's label, e.g. "int4-g128-sym", with "-act" when columns are grouped by
  /// act-order.
  std::string format() const override { return format_; }
  /// \brief The kernels' view of the device arrays.
  QuantizedWeightView view() const;
  /// \brief One quantized layer over the rows stacked (codes, scales and zero points end to
  /// end), when every part below is a QuantizedDeviceLinear of the same format and columns
  /// with the same act-order g_idx (the columns' groups are shared by all rows); else null.
  /// GPTQ gives wq, wk, wv (and w1, w3) the same g_idx: they share their input's Hessian.
  std::unique_ptr<DeviceLinear> stacked_with(
      const std::vector<const DeviceLinear*>& below) const override;

 private:
  QuantizedDeviceLinear() = default;

  DeviceBuffer<std::uint8_t> qweight_;  // (rows, row_bytes) packed codes
  DeviceBuffer<std::uint16_t> scales_;  // (rows, groups) fp16 bits
  DeviceBuffer<std::uint16_t> zeros_;   // (rows, groups) fp16 bits; empty when symmetric
  DeviceBuffer<std::int32_t> g_idx_;    // (cols); empty without act-order
  int rows_ = 0;
  int cols_ = 0;
  int bits_ = 4;
  int group_width_ = 1;  // the view's group size: per channel is `cols`
  std::string format_;
  std::vector<std::int32_t> host_g_idx_;  // (cols) g_idx as uploaded, to compare when stacking
};

/// \brief The device form of `q`: every block's seven linears as `QuantizedDeviceLinear`, the
/// embedding, norms and classifier (fp32 in `q`) rounded to `dtype`, which is also the storage
/// type a `NaiveDecoder` gives the KV cache. Validates `q` first (`QuantizedModel::validate`,
/// `LoadError` naming the tensor).
DeviceModel make_quantized_device_model(const quant::QuantizedModel& q, DType dtype);

/// \brief The fp32 model whose oracle forward `make_quantized_device_model(q, dtype)` computes:
/// the linears dequantized (exact), every other tensor rounded to `dtype` and widened back —
/// what `round_weights` is for a dense model.
Model quantized_oracle_model(const quant::QuantizedModel& q, DType dtype);

}  // namespace nanoserve::engine
