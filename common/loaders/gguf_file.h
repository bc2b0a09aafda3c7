#pragma once
/// \file
/// \brief Parsing the GGUF container (llama.cpp's format, versions 2 and 3): header, metadata,
/// tensor infos, and the aligned data section. Model-independent; `gguf_loader.h` maps the
/// result to a `Model`.
///
///     "GGUF"  uint32 version  uint64 tensor_count  uint64 metadata_kv_count
///     metadata_kv_count x { string key, uint32 value_type, value }
///     tensor_count x { string name, uint32 n_dims, uint64 dims[n_dims] (innermost first),
///                      uint32 ggml_type, uint64 offset (relative to the data section) }
///     padding to `general.alignment` (default 32)
///     data section: tensor bytes, each tensor at a multiple of the alignment
///
/// Version 1 stored counts and lengths as uint32 and is rejected; versions 2 and 3 share this
/// layout (v3 only added big-endian files, which are rejected too).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/loaders/ggml_types.h"
#include "common/loaders/gguf_metadata.h"

namespace nanoserve {

/// \brief One tensor info of a GGUF file, with its byte range already checked.
struct GgufTensorInfo {
  std::string name;            ///< e.g. "blk.0.attn_q.weight"
  std::vector<uint64_t> dims;  ///< innermost first: [64, 512] is 512 rows of 64
  const GgmlTypeInfo* type;    ///< element type (never null once parsed)
  uint64_t offset = 0;         ///< from the start of the data section
  uint64_t n_elements = 0;     ///< product of dims
  uint64_t n_bytes = 0;        ///< stored size
};

/// \brief A parsed GGUF file. It points into the bytes it was parsed from.
struct GgufFile {
  std::string name;                     ///< file name for error messages
  uint32_t version = 0;                 ///< 2 or 3
  GgufMetadata metadata;                ///< every key/value pair
  std::vector<GgufTensorInfo> tensors;  ///< in file order
  uint64_t alignment = 32;              ///< `general.alignment`, or the default 32
  uint64_t data_offset = 0;             ///< absolute offset of the data section
  const uint8_t* bytes = nullptr;       ///< the whole file

  /// \brief The tensor called `name`, or nullptr.
  const GgufTensorInfo* find_tensor(const std::string& name) const;
  /// \brief Pointer to the stored bytes of `tensor` (range checked when parsing).
  const uint8_t* tensor_data(const GgufTensorInfo& tensor) const {
    return bytes + data_offset + tensor.offset;
  }
};

/// \brief The four magic bytes at offset 0 of every GGUF file.
inline constexpr char kGgufMagic[4] = {'G', 'G', 'U', 'F'};
/// \brief Default data alignment when `general.alignment` is absent.
inline constexpr uint64_t kGgufDefaultAlignment = 32;
/// \brief Deepest nesting of arrays accepted (the spec allows nesting; files use depth 1).
inline constexpr int kGgufMaxArrayDepth = 8;
/// \brief Most dimensions a tensor may have (ggml's GGML_MAX_DIMS).
inline constexpr uint32_t kGgufMaxDims = 4;

/// \brief Parses and validates a GGUF file held in memory (the bytes must outlive the result).
///
/// Every count and length is checked against the bytes left before anything is allocated;
/// every tensor's byte range is checked to lie inside the file, aligned, without overlaps.
/// Throws `LoadError(name, field, …)`; a tensor of a ggml type outside nanoserve's table is
/// rejected here, naming the tensor and the type id.
GgufFile parse_gguf(const uint8_t* data, size_t size, const std::string& name);

}  // namespace nanoserve
