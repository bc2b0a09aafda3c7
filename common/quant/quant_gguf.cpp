#include "common/quant/quant_gguf.h"

#include <cstring>

#include "common/error.h"
#include "common/loaders/ggml_types.h"
#include "common/loaders/gguf_export.h"
#include "common/loaders/gguf_quant_blocks.h"
#include "common/quant/packing.h"

namespace nanoserve::quant {

namespace {

constexpr int kBlock = kGgmlBlock32;

/// What GGUF can store, for error messages.
const char* const kGgufSchemes =
    "GGUF stores int4-g32-sym (as Q4_0) and int8-g32-sym (as Q8_0) losslessly, or Q4_K "
    "quantized from the fp32 model (--gguf-type q4_k, RTN)";

std::string tensor_name(int layer, LinearId id) {
  return "blk." + std::to_string(layer) + "." + gguf_linear_name(id) + ".weight";
}

/// File row -> model row of wq/wk when the GGUF layout permutes them (empty: identity).
std::vector<int> row_order(const ModelConfig& c, LinearId id) {
  if (!gguf_permutes_qk(c) || (id != LinearId::kWq && id != LinearId::kWk)) return {};
  std::vector<int> order(size_t(linear_rows(c, id)));
  for (size_t r = 0; r < order.size(); ++r) order[r] = gguf_source_row(int(r), c.head_dim);
  return order;
}

void check_row(const std::string& name, int cols, int block, const char* type) {
  if (cols % block != 0) {
    throw InvalidArgument(name + ": rows of " + std::to_string(cols) + " columns are not whole " +
                          std::to_string(block) + "-column " + type + " blocks (nanoserve "
                          "convert falls back per tensor, as llama.cpp does)");
  }
}

/// Checks what a lossless export needs of one linear (act-order, whole 32-blocks).
void check_linear(const QuantizedLinear& q, const std::string& name) {
  if (!q.g_idx.empty()) {
    throw InvalidArgument(name + ": GPTQ act-order groups are scattered over the row, GGUF's "
                          "blocks are 32 consecutive columns; quantize without --act-order");
  }
  check_row(name, q.cols, kBlock, q.scheme.bits == 4 ? "Q4_0" : "Q8_0");
}

}  // namespace

void check_gguf_linear_shapes(const ModelConfig& c, uint32_t ggml_type) {
  const bool k = ggml_type == kGgmlTypeQ4_K;
  if (!k && ggml_type != kGgmlTypeQ4_0 && ggml_type != kGgmlTypeQ8_0) {
    throw InvalidArgument("check_gguf_linear_shapes: ggml type " + std::to_string(ggml_type) +
                          " is not Q4_0, Q8_0 or Q4_K");
  }
  for (LinearId id : kLinearIds) {
    check_row(tensor_name(0, id), linear_cols(c, id), k ? kGgmlBlockK : kBlock,
              k ? "Q4_K" : ggml_type == kGgmlTypeQ4_0 ? "Q4_0" : "Q8_0");
  }
}

const char* gguf_linear_name(LinearId id) {
  switch (id) {
    case LinearId::kWq: return "attn_q";
    case LinearId::kWk: return "attn_k";
    case LinearId::kWv: return "attn_v";
    case LinearId::kWo: return "attn_output";
    case LinearId::kW1: return "ffn_gate";
    case LinearId::kW2: return "ffn_down";
    case LinearId::kW3: return "ffn_up";
  }
  return "unknown";
}

uint32_t lossless_gguf_type(const QuantScheme& s) {
  if (s.group_size == kBlock && s.symmetric && s.bits == 4) return kGgmlTypeQ4_0;
  if (s.group_size == kBlock && s.symmetric && s.bits == 8) return kGgmlTypeQ8_0;
  throw InvalidArgument("scheme " + s.label() + " has no GGUF form: " + kGgufSchemes);
}

GgufEncodedTensor encode_gguf_linear(const QuantizedLinear& q, const std::string& name,
                                     const std::vector<int>& order) {
  GgufEncodedTensor t;
  t.ggml_type = lossless_gguf_type(q.scheme);
  check_linear(q, name);
  const bool int4 = t.ggml_type == kGgmlTypeQ4_0;
  const int block_bytes = 2 + (int4 ? kBlock / 2 : kBlock);  // fp16 d + codes
  const int blocks = q.cols / kBlock;
  t.bytes.resize(size_t(q.rows) * size_t(blocks) * size_t(block_bytes));
  const int64_t stride = q.row_bytes();
  for (int r = 0; r < q.rows; ++r) {
    const int src = order.empty() ? r : order[size_t(r)];
    const uint8_t* codes = q.qweight.data() + int64_t(src) * stride;
    for (int g = 0; g < blocks; ++g) {
      uint8_t* block = &t.bytes[(size_t(r) * size_t(blocks) + size_t(g)) * size_t(block_bytes)];
      // d is our scale, bit for bit; symmetric codes carry the zero point 8 / 128 as ggml's do.
      std::memcpy(block, &q.scales[size_t(src) * size_t(blocks) + size_t(g)], 2);
      const int c0 = g * kBlock;
      if (int4) {  // byte j: column j low nibble, column j + 16 high nibble
        for (int j = 0; j < kBlock / 2; ++j) {
          const int lo = unpack_code(codes, stride, 4, 0, c0 + j);
          const int hi = unpack_code(codes, stride, 4, 0, c0 + j + kBlock / 2);
          block[2 + j] = uint8_t(lo | (hi << 4));
        }
      } else {
        for (int j = 0; j < kBlock; ++j) block[2 + j] = uint8_t(int8_t(int(codes[c0 + j]) - 128));
      }
    }
  }
  return t;
}

std::vector<uint8_t> export_quantized_gguf(const QuantizedModel& q, const GgufVocabulary& vocab) {
  lossless_gguf_type(q.scheme);
  const ModelConfig& c = q.base.config;
  for (int l = 0; l < int(q.layers.size()); ++l) {
    for (LinearId id : kLinearIds) check_linear(q.layers[size_t(l)][id], tensor_name(l, id));
  }
  GgufEncodedTensors encoded;
  for (int l = 0; l < int(q.layers.size()); ++l) {
    for (LinearId id : kLinearIds) {
      encoded[tensor_name(l, id)] =
          encode_gguf_linear(q.layers[size_t(l)][id], tensor_name(l, id), row_order(c, id));
    }
  }
  // The base's linear vectors are empty: gguf_layout permutes nothing but the RoPE style.
  const Model m = gguf_layout(q.base);
  return save_gguf_typed(m, [](const std::vector<uint64_t>&) { return kGgmlTypeF32; }, &vocab,
                         &encoded);
}

std::vector<uint8_t> export_q4_k_gguf(const Model& model, const GgufVocabulary& vocab) {
  const ModelConfig& c = model.config;
  check_gguf_linear_shapes(c, kGgmlTypeQ4_K);
  Model m = gguf_layout(model);
  GgufEncodedTensors encoded;
  for (int l = 0; l < c.n_layers; ++l) {
    for (LinearId id : kLinearIds) {
      std::vector<float>& w = linear_weights(m.layers[size_t(l)], id);
      encoded[tensor_name(l, id)] = {kGgmlTypeQ4_K, encode_q4_k(w)};
      w.clear();
      w.shrink_to_fit();
    }
  }
  return save_gguf_typed(m, [](const std::vector<uint64_t>&) { return kGgmlTypeF32; }, &vocab,
                         &encoded);
}

}  // namespace nanoserve::quant
