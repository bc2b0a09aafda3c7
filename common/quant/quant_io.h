#pragma once
/// \file
/// \brief Saving and loading a `QuantizedModel`: nanoserve's own small file format, "NSQM".
///
/// Little-endian throughout. A fixed 80-byte header, the model name, a tensor table, then the
/// tensors' bytes back to back in table order; the file ends with the last tensor:
///
///     offset size  field
///      0     4     magic "NSQM"
///      4     u32   version = 1
///      8     i32   dim           12 i32 hidden_dim    16 i32 n_layers     20 i32 n_heads
///     24     i32   n_kv_heads    28 i32 head_dim      32 i32 vocab_size   36 i32 max_seq_len
///     40     f32   rope_theta    44 u32 rope_style (0 adjacent pairs, 1 rotate half)
///     48     f32   norm_eps      52 u32 tied_classifier (0/1)
///     56     u32   bits (4/8)    60 u32 group_size (0 = per channel)
///     64     u32   symmetric (0/1)                    68 u32 method (0 rtn, 1 gptq, 2 awq)
///     72     u32   tensor_count  76 u32 name_bytes
///     80     name_bytes bytes: the model's name (UTF-8, informational)
///     then tensor_count entries: u16 name_len, name, u32 dtype, u64 offset, u64 n_bytes
///     then the data section: tensor i occupies [data + offset_i, data + offset_i + n_bytes_i)
///
/// dtype: 0 F32, 1 U8 (packed codes), 2 F16 (scales, zero points), 3 I32 (g_idx).
/// Tensors (shapes as in `Model` and `QuantizedLinear`):
///
///     token_embedding F32, classifier F32 (only when untied), final_norm F32,
///     layers.<l>.attn_norm F32, layers.<l>.ffn_norm F32,
///     layers.<l>.<wq|wk|wv|wo|w1|w2|w3>.qweight U8, .scales F16,
///     .zeros F16 (asymmetric only), .g_idx I32 (optional: act-order)
///
/// The loader validates like every nanoserve loader: the header's config and scheme, the
/// table's size against the bytes left, every tensor's range, dtype and exact size (from the
/// config and scheme) before anything is allocated, then the values (finite fp32 tensors,
/// positive finite scales, integer zero points, g_idx in range). Errors are
/// `LoadError(file, field, detail)`.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/quant/quantized_model.h"

namespace nanoserve::quant {

/// \brief The four magic bytes of an NSQM file.
inline constexpr char kNsqmMagic[4] = {'N', 'S', 'Q', 'M'};
/// \brief The format version this code writes and reads.
inline constexpr uint32_t kNsqmVersion = 1;
/// \brief Bytes of the fixed header.
inline constexpr size_t kNsqmHeaderBytes = 80;

/// \brief `model` as NSQM bytes. Throws `InvalidArgument` if it fails validation.
std::vector<uint8_t> serialize_quantized_model(const QuantizedModel& model);
/// \brief Writes `model` to `path` (`InvalidArgument` if it cannot be written).
void save_quantized_model(const QuantizedModel& model, const std::string& path);

/// \brief Parses and validates NSQM bytes; `name` names them in errors.
QuantizedModel load_quantized_model_from_memory(const uint8_t* data, size_t size,
                                                const std::string& name);
/// \brief Loads the NSQM file at `path`.
QuantizedModel load_quantized_model(const std::string& path);

}  // namespace nanoserve::quant
