#pragma once
/// \file
/// \brief A `QuantizedModel` as a GGUF file that llama.cpp runs: what
/// `nanoserve quantize --out FILE.gguf` writes.
///
/// Two of nanoserve's schemes ARE ggml block types, code for code, so they are written without
/// any requantization — the file decodes to exactly `QuantizedModel::dequantize()`:
///
///     nanoserve scheme            GGUF    block (32 consecutive columns of a row)
///     int4, group 32, symmetric   Q4_0    d = our fp16 scale,  nibble = our code (0..15)
///                                         x = d · (nibble − 8)   = s · (q − 8)
///     int8, group 32, symmetric   Q8_0    d = our fp16 scale,  int8 = our code − 128
///                                         x = d · int8           = s · (q − 128)
///
/// The method does not matter (RTN, GPTQ and AWQ all hand codes to the same grid). The nibble
/// order differs: our packing puts columns 2k, 2k+1 in one byte, Q4_0 puts j and j + 16
/// (common/quant/packing.h, common/loaders/gguf_quant_blocks.h), so codes are repacked.
/// What GGUF cannot store is refused: other group sizes (ggml's blocks are 32 wide), a zero
/// point (Q4_1 has an fp16 min, not an integer zero point), act-order (its groups are not
/// consecutive columns), rows that are not whole blocks of 32.
///
/// Everything else is written from `QuantizedModel::base` in F32: the embedding, classifier and
/// norms — the norms AWQ folded its scales into, not the original model's.
///
/// Q4_K (ggml's 256-element super-blocks with 6-bit sub-block scales and mins) is not one of
/// our grids; `export_q4_k_gguf` quantizes an fp32 model's linears to it with ggml's reference
/// quantizer (`encode_q4_k`: round to nearest with a fitted scale and min, i.e. RTN).

#include <cstdint>
#include <string>
#include <vector>

#include "common/loaders/gguf_vocabulary.h"
#include "common/loaders/gguf_writer.h"
#include "common/model.h"
#include "common/quant/quantized_model.h"

namespace nanoserve::quant {

/// \brief The tensor name of `id` in a GGUF block: "attn_q", "attn_k", "attn_v",
/// "attn_output", "ffn_gate", "ffn_down" or "ffn_up".
const char* gguf_linear_name(LinearId id);

/// \brief The ggml type that stores `scheme` losslessly: Q4_0 for int4-g32-sym, Q8_0 for
/// int8-g32-sym; `InvalidArgument` naming what GGUF can store for any other scheme.
uint32_t lossless_gguf_type(const QuantScheme& scheme);

/// \brief Throws `InvalidArgument` naming the first linear of a model with config `c` whose
/// rows are not whole blocks of `ggml_type` (Q4_0, Q8_0: 32 columns; Q4_K: 256): a check to
/// make before quantizing.
void check_gguf_linear_shapes(const ModelConfig& c, uint32_t ggml_type);

/// \brief `q` as Q4_0 / Q8_0 blocks (`lossless_gguf_type`), rows back to back; row r of the
/// result holds row `row_order[r]` of `q` (row r when `row_order` is empty). Throws
/// `InvalidArgument` naming `name` for act-order or rows that are not whole 32-blocks.
GgufEncodedTensor encode_gguf_linear(const QuantizedLinear& q, const std::string& name,
                                     const std::vector<int>& row_order = {});

/// \brief The GGUF file of `q` with `vocab` (see the file comment); the same checks as
/// `lossless_gguf_type` and `encode_gguf_linear`, made before anything is encoded.
std::vector<uint8_t> export_quantized_gguf(const QuantizedModel& q, const GgufVocabulary& vocab);

/// \brief `model`'s GGUF file with its seven linears per block as Q4_K (`encode_q4_k`) and
/// every other tensor F32. Throws `InvalidArgument` naming the first linear whose rows are not
/// whole 256-element super-blocks (`nanoserve convert --dtype q4_k` instead falls back per
/// tensor, as llama.cpp does).
std::vector<uint8_t> export_q4_k_gguf(const Model& model, const GgufVocabulary& vocab);

}  // namespace nanoserve::quant
