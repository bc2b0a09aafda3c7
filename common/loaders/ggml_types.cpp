#include "common/loaders/ggml_types.h"

#include "common/loaders/gguf_more_blocks.h"
#include "common/loaders/gguf_quant_blocks.h"

namespace nanoserve {

namespace {

// Ids and block geometry follow ggml's `ggml_type` enum and its type traits (ggml.h,
// ggml-common.h). Ids 4 and 5 (old Q4_2/Q4_3) were removed upstream; the IQ* family (16-23,
// 29) is not listed, so files using it are rejected as "not in nanoserve's table".
constexpr GgmlTypeInfo kGgmlTypes[] = {
    {0, "F32", 1, 4, decode_f32},
    {1, "F16", 1, 2, decode_f16},
    {2, "Q4_0", 32, 18, decode_q4_0},  // fp16 scale + 32 x 4-bit
    {3, "Q4_1", 32, 20, decode_q4_1},  // fp16 scale, fp16 min + 32 x 4-bit
    {6, "Q5_0", 32, 22, decode_q5_0},  // fp16 scale + 32 high bits + 32 x 4-bit
    {7, "Q5_1", 32, 24, decode_q5_1},
    {8, "Q8_0", 32, 34, decode_q8_0},  // fp16 scale + 32 x int8
    {9, "Q8_1", 32, 36, nullptr},
    {10, "Q2_K", 256, 84, decode_q2_k},  // K-quants: 256-element super-blocks
    {11, "Q3_K", 256, 110, decode_q3_k},
    {12, "Q4_K", 256, 144, decode_q4_k},
    {13, "Q5_K", 256, 176, decode_q5_k},
    {14, "Q6_K", 256, 210, decode_q6_k},
    {15, "Q8_K", 256, 292, nullptr},
    {24, "I8", 1, 1, nullptr},
    {25, "I16", 1, 2, nullptr},
    {26, "I32", 1, 4, nullptr},
    {27, "I64", 1, 8, nullptr},
    {28, "F64", 1, 8, nullptr},
    {30, "BF16", 1, 2, decode_bf16},
};

}  // namespace

const GgmlTypeInfo* find_ggml_type(uint32_t id) {
  for (const GgmlTypeInfo& t : kGgmlTypes) {
    if (t.id == id) return &t;
  }
  return nullptr;
}

std::string decodable_ggml_type_names() {
  std::string names;
  for (const GgmlTypeInfo& t : kGgmlTypes) {
    if (t.decode == nullptr) continue;
    if (!names.empty()) names += ", ";
    names += t.name;
  }
  return names;
}

}  // namespace nanoserve
