#pragma once
/// \file
/// \brief A GGUF checkpoint on the device with its quantized linears still in llama.cpp's block
/// formats: Q8_0, Q4_0, Q4_K and Q6_K linears of the blocks are uploaded byte for byte and run
/// through the GGUF kernels (kernels/gguf_linear.h); every other tensor — embedding, norms, the
/// classifier (DeviceModel keeps it dense, whatever its type), and linears of the other types
/// (Q5_K, Q3_K, … of a Q5_K_M or Q3_K_M file) — is decoded range by range and rounded to the
/// storage type, as for any checkpoint.
///
///     blk.N.attn_q.weight   Q4_K ──upload as stored──►  GgufDeviceLinear  (4.5 bits per weight)
///     blk.N.ffn_down.weight Q6_K ──upload as stored──►  GgufDeviceLinear  (6.5625 bits)
///     output.weight         Q6_K ──decode, round────►  DenseLinear in --dtype (the classifier)
///     token_embd.weight     Q4_K ──decode, round────►  DeviceTensor in --dtype (a lookup table)
///
/// So a Llama-3.1-8B Q4_K_M file needs ~6.3 GB of device memory in bf16 instead of 16 GB (modeled
/// from the shapes: Q4_K layers 3.36 GB and the 16 layers' Q6_K ffn_down and attn_v 0.83 GB packed;
/// embedding and classifier 1.05 GB each in bf16; 7.5 GB while Q6_K was decoded to bf16), and
/// decode reads all but the embedding per token. The host never holds the model: the file is
/// mapped, and each tensor is uploaded from the mapping (`GgufCheckpointReader`).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "common/engine/model/device_model.h"
#include "common/loaders/gguf_reader.h"
#include "kernels/device_buffer.h"
#include "kernels/gguf_linear.h"

namespace nanoserve::engine {

/// \brief The packed format of ggml type `ggml_type`, or none when the type is decoded on
/// upload instead.
std::optional<GgufBlockType> gguf_packed_type(std::uint32_t ggml_type);

/// \brief A GGUF Q8_0 / Q4_0 / Q4_K / Q6_K weight (rows, cols) on the device as the file stores it,
/// applied with `launch_gguf_linear`: the GEMV decoding blocks in registers for up to
/// `kGgufLinearGemvMaxRows` rows, else dequantize into a scratch matrix shared by the model's GGUF
/// layers (they run one after another on one stream) and the dense GEMM.
///
/// \par Example
/// \snippet tests/ch05/test_gguf_device_model.cpp GgufDeviceLinear
class GgufDeviceLinear final : public DeviceLinear {
 public:
  /// \brief Uploads `rows` rows of blocks of `type` from `blocks` (rows × row_bytes bytes).
  /// `scratch` must hold rows × cols elements of the activation type for the GEMM path
  /// (`apply` throws otherwise). Throws `InvalidArgument` when `cols` is not a multiple of the
  /// block size or a size is not positive.
  GgufDeviceLinear(GgufBlockType type, int rows, int cols, const std::uint8_t* blocks,
                   std::shared_ptr<DeviceBuffer<unsigned char>> scratch);

  using DeviceLinear::apply;
  /// \brief See `DeviceLinear::apply`.
  void apply(const void* x, DType x_type, void* y, DType y_type, int rows, cudaStream_t stream,
             Epilogue epilogue) const override;
  /// \brief Rows of W.
  int out_features() const override { return view_.rows; }
  /// \brief Columns of W.
  int in_features() const override { return view_.cols; }
  /// \brief None: the blocks are not a `DeviceTensor` (see `own_bytes`).
  std::vector<const DeviceTensor*> tensors() const override { return {}; }
  /// \brief Bytes of the blocks on the device.
  std::int64_t own_bytes() const override { return static_cast<std::int64_t>(blocks_.bytes()); }
  /// \brief "gguf-q8_0", "gguf-q4_0", "gguf-q4_k" or "gguf-q6_k".
  std::string format() const override;
  /// \brief One layer over the rows stacked (blocks end to end) when every part below is a
  /// GgufDeviceLinear of the same type and columns; else null.
  std::unique_ptr<DeviceLinear> stacked_with(
      const std::vector<const DeviceLinear*>& below) const override;
  /// \brief The kernels' view of the blocks.
  const GgufWeightView& view() const { return view_; }

 private:
  GgufDeviceLinear() = default;
  DeviceBuffer<std::uint8_t> blocks_;
  GgufWeightView view_;
  std::shared_ptr<DeviceBuffer<unsigned char>> scratch_;
};

/// \brief The model of `reader`'s file on the device (see the file comment), the storage type
/// (and activation type) `dtype`. With `keep_packed` false every tensor is decoded and rounded
/// to `dtype` (the comparison point: same file, dense weights). Throws `LoadError` for a
/// tensor that is missing, misshapen or of a type without a decoder.
DeviceModel make_gguf_device_model(const GgufCheckpointReader& reader, DType dtype,
                                   bool keep_packed = true);

/// \brief The fp32 model whose oracle forward `make_gguf_device_model(reader, dtype)` computes
/// on its GEMV path: packed linears decoded exactly (the kernels use the same fp32 values),
/// every other tensor rounded to `dtype` and widened back.
Model gguf_oracle_model(const GgufCheckpointReader& reader, DType dtype);

}  // namespace nanoserve::engine
