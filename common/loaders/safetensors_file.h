#pragma once
/// \file
/// \brief Parsing the safetensors container (Hugging Face): an 8-byte little-endian header
/// length N, N bytes of JSON, then the data section.
///
///     uint64 N | {"__metadata__": {"k": "v", …},
///                 "model.norm.weight": {"dtype": "F32", "shape": [128],
///                                       "data_offsets": [begin, end]}, …} | data …
///
/// `data_offsets` are relative to the data section (byte 8 + N). Every tensor is checked:
/// known dtype, `end - begin == prod(shape) * dtype size`, range inside the data section, and
/// no two tensors overlapping.

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/loaders/tensor_decode.h"

namespace nanoserve {

/// \brief A safetensors dtype: its name, element size, and fp32 decoder (nullptr if none yet).
struct SafetensorsDtype {
  const char* name;       ///< "F32", "BF16", "I8", …
  uint32_t element_size;  ///< bytes per element
  TensorDecoder decode;   ///< nullptr when nanoserve cannot decode this dtype
};

/// \brief One tensor entry of the header, with its byte range already checked.
struct SafetensorsTensor {
  std::string name;               ///< e.g. "model.layers.0.self_attn.q_proj.weight"
  const SafetensorsDtype* dtype;  ///< never null once parsed
  std::vector<uint64_t> shape;    ///< outermost first (row-major): [rows, cols]
  uint64_t begin = 0;             ///< first byte, relative to the data section
  uint64_t end = 0;               ///< one past the last byte
  uint64_t n_elements = 0;        ///< product of shape (1 for a scalar)
};

/// \brief A parsed safetensors file. It points into the bytes it was parsed from.
struct SafetensorsFile {
  std::string name;                             ///< file name for error messages
  std::vector<SafetensorsTensor> tensors;       ///< sorted by begin offset
  std::map<std::string, std::string> metadata;  ///< the optional `__metadata__` object
  uint64_t data_offset = 0;                     ///< absolute offset of the data section
  const uint8_t* bytes = nullptr;               ///< the whole file

  /// \brief The tensor called `name`, or nullptr.
  const SafetensorsTensor* find(const std::string& name) const;
  /// \brief Pointer to the stored bytes of `tensor`.
  const uint8_t* tensor_data(const SafetensorsTensor& tensor) const {
    return bytes + data_offset + tensor.begin;
  }
};

/// \brief Largest JSON header accepted (the reference implementation's limit, 100 MB).
inline constexpr uint64_t kSafetensorsMaxHeaderBytes = 100'000'000;

/// \brief Parses and validates a safetensors file held in memory (bytes must outlive the
/// result); throws `LoadError(name, field, …)`.
SafetensorsFile parse_safetensors(const uint8_t* data, size_t size, const std::string& name);

/// \brief One tensor for `save_safetensors`: its name, dtype name, shape and encoded bytes.
struct SafetensorsEntry {
  std::string name;             ///< tensor name
  std::string dtype;            ///< "F32", "F16", "BF16", …
  std::vector<uint64_t> shape;  ///< row-major shape
  std::vector<uint8_t> bytes;   ///< the stored data
};
/// \brief Builds a safetensors file from `entries` (stored in the order given) and optional
/// `__metadata__`; the inverse of `parse_safetensors`.
std::vector<uint8_t> save_safetensors(const std::vector<SafetensorsEntry>& entries,
                                      const std::map<std::string, std::string>& metadata);

}  // namespace nanoserve
