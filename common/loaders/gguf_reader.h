#pragma once
/// \file
/// \brief `GgufCheckpointReader`: a GGUF file opened to be uploaded to a device tensor by tensor
/// and range by range — the GGUF counterpart of `HfCheckpointReader`. Nothing is decoded when it
/// opens: the file is memory-mapped and parsed (header, metadata, tensor infos, every byte
/// range checked), and the config read.
///
/// Two ways to read a tensor:
///  - `read(field, layer, offset, count)`: a range of whole rows decoded to fp32 (any type with
///    a decoder), for tensors that become fp16/bf16/fp32 device tensors;
///  - `stored(field, layer)`: the tensor's stored bytes as they are, for the block formats that
///    stay packed on the device (Q8_0, Q4_0, Q4_K, Q6_K: engine/model/gguf_device_model.h).
/// Either way the pages read are released from this process afterwards (`madvise`; they stay
/// in the page cache), so resident memory holds one range, not the file.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/loaders/gguf_file.h"
#include "common/loaders/mapped_file.h"
#include "common/model.h"

namespace nanoserve {

/// \brief Elements `[offset, offset + count)` of `tensor` (row-major) of `file`, decoded to fp32
/// and checked finite; the range is clipped at the tensor's end. `offset` and `count` must be
/// whole blocks of the tensor's type (whole rows always are), otherwise `InvalidArgument`;
/// `LoadError` for a type without a decoder or a value that is not finite.
std::vector<float> decode_gguf_range(const GgufFile& file, const GgufTensorInfo& tensor,
                                     std::size_t offset, std::size_t count);

/// \brief A GGUF checkpoint mapped and parsed, read tensor by tensor (see the file comment).
class GgufCheckpointReader {
 public:
  /// \brief Maps and parses `path` and reads its config (`gguf_model_config`); throws
  /// `LoadError` for a bad file.
  explicit GgufCheckpointReader(const std::string& path);
  GgufCheckpointReader(const GgufCheckpointReader&) = delete;
  GgufCheckpointReader& operator=(const GgufCheckpointReader&) = delete;

  /// \brief The model's shape.
  const ModelConfig& config() const { return config_; }
  /// \brief The parsed file (metadata, tensor infos).
  const GgufFile& file() const { return file_; }
  /// \brief The tensor info of `Model` field `field` of `layer` (-1: model-wide), its shape
  /// checked (`gguf_field_tensor`).
  const GgufTensorInfo& tensor(const std::string& field, int layer) const;
  /// \brief `decode_gguf_range` of that tensor; the pages read are released afterwards.
  std::vector<float> read(const std::string& field, int layer, std::size_t offset,
                          std::size_t count) const;
  /// \brief The stored bytes of `tensor` (`tensor.n_bytes` of them, inside the mapping).
  const std::uint8_t* stored(const GgufTensorInfo& tensor) const {
    return file_.tensor_data(tensor);
  }
  /// \brief Releases the mapped pages of `bytes` bytes at `data` from resident memory (call it
  /// once they are on the device).
  void release(const std::uint8_t* data, std::size_t bytes) const;
  /// \brief Every tensor decoded: the whole fp32 `Model` (the CPU oracle's input).
  Model model() const;

 private:
  MappedFile mapped_;
  GgufFile file_;
  ModelConfig config_;
};

}  // namespace nanoserve
