#pragma once
/// \file
/// \brief The table of ggml tensor element types a GGUF file may use: storage geometry for
/// every type nanoserve knows, and a decoder for those it can turn into fp32 today.
///
/// Quantized types store blocks: `block_size` consecutive elements of a row share one
/// `type_size`-byte block (e.g. Q8_0: 32 int8 values + one fp16 scale = 34 bytes). The GGUF
/// parser needs only the geometry (to check tensor byte ranges), so every known type is listed;
/// F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 and Q2_K…Q6_K decode to fp32
/// (gguf_quant_blocks.h, gguf_more_blocks.h).

#include <cstdint>
#include <string>

#include "common/loaders/tensor_decode.h"

namespace nanoserve {

/// \brief Geometry (and decoder, if any) of one ggml element type.
struct GgmlTypeInfo {
  uint32_t id;           ///< the `ggml_type` value stored in GGUF tensor infos
  const char* name;      ///< ggml's name, e.g. "F32", "Q8_0"
  uint32_t block_size;   ///< elements per block (1 for float types)
  uint32_t type_size;    ///< bytes per block
  TensorDecoder decode;  ///< fp32 decoder; nullptr while nanoserve cannot decode this type
};

/// \brief The entry for ggml type `id`, or nullptr if the id is not in nanoserve's table.
const GgmlTypeInfo* find_ggml_type(uint32_t id);

/// \brief ggml type id of fp32 tensors.
inline constexpr uint32_t kGgmlTypeF32 = 0;
/// \brief ggml type id of fp16 tensors.
inline constexpr uint32_t kGgmlTypeF16 = 1;
/// \brief ggml type id of Q4_0 blocks (gguf_quant_blocks.h).
inline constexpr uint32_t kGgmlTypeQ4_0 = 2;
/// \brief ggml type id of Q5_0 blocks (gguf_more_blocks.h).
inline constexpr uint32_t kGgmlTypeQ5_0 = 6;
/// \brief ggml type id of Q8_0 blocks.
inline constexpr uint32_t kGgmlTypeQ8_0 = 8;
/// \brief ggml type id of Q4_K super-blocks.
inline constexpr uint32_t kGgmlTypeQ4_K = 12;
/// \brief ggml type id of Q6_K super-blocks (gguf_more_blocks.h).
inline constexpr uint32_t kGgmlTypeQ6_K = 14;
/// \brief ggml type id of bf16 tensors.
inline constexpr uint32_t kGgmlTypeBF16 = 30;

/// \brief "F32, F16, Q4_0, …": the types with a decoder, for error messages.
std::string decodable_ggml_type_names();

}  // namespace nanoserve
