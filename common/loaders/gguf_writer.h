#pragma once
/// \file
/// \brief Writing GGUF files: a generic `GgufWriter` (any metadata, any tensors) and
/// `save_gguf`, which lays a `Model` out the way llama.cpp names Llama tensors.
///
/// Used to build small test and fuzz-seed files, and by later chapters to export models.

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/loaders/gguf_metadata.h"
#include "common/loaders/gguf_vocabulary.h"
#include "common/model.h"

namespace nanoserve {

/// \brief Collects metadata and tensors, then serializes a GGUF v3 file.
class GgufWriter {
 public:
  /// \brief Adds a metadata pair (written in insertion order).
  void add_metadata(const std::string& key, GgufValue value);
  /// \brief Adds a tensor: `dims` innermost first, `ggml_type` a ggml type id, `bytes` its
  /// stored data (the caller is responsible for them matching).
  void add_tensor(const std::string& name, const std::vector<uint64_t>& dims, uint32_t ggml_type,
                  std::vector<uint8_t> bytes);
  /// \brief The file: header, metadata, tensor infos, padding, data (each tensor aligned).
  std::vector<uint8_t> serialize(uint64_t alignment = 32) const;

 private:
  struct Tensor {
    std::string name;
    std::vector<uint64_t> dims;
    uint32_t ggml_type;
    std::vector<uint8_t> bytes;
  };
  std::vector<std::pair<std::string, GgufValue>> metadata_;
  std::vector<Tensor> tensors_;
};

/// \brief A GGUF string value.
GgufValue gguf_string(std::string s);
/// \brief A GGUF uint32 value.
GgufValue gguf_uint32(uint32_t x);
/// \brief A GGUF float32 value.
GgufValue gguf_float32(float x);

/// \brief Encodes fp32 values as ggml type `ggml_type`: F32, F16 or BF16 (round to nearest
/// even), or Q8_0, Q4_0, Q5_0, Q4_K with ggml's reference quantizers (gguf_quant_blocks.h; the
/// size must be a multiple of the block); throws `InvalidArgument` for any other type.
std::vector<uint8_t> encode_floats(const std::vector<float>& values, uint32_t ggml_type);

/// \brief `model` as a GGUF file of its architecture (`llama`, or `qwen2` with F32 q/k/v
/// biases): `ARCH.*` metadata, tensors stored as `ggml_type` (F32/F16/BF16), `output.weight`
/// only when the classifier is untied, and `vocab`'s `tokenizer.ggml.*` keys when given.
/// RoPE scaling is written the way llama.cpp's converter writes it: linear as
/// `ARCH.rope.scaling.{type,factor}`, llama3 (or frequency factors read from a GGUF) as the F32
/// tensor `rope_freqs.weight` (`llama3_rope_freq_factors`).
/// Throws `InvalidArgument` for a llama model with rotate-half RoPE (its wq/wk rows would have
/// to be permuted first), a qwen2 one with adjacent pairs, or biases outside qwen2.
std::vector<uint8_t> save_gguf(const Model& model, uint32_t ggml_type,
                               const GgufVocabulary* vocab = nullptr);

/// \brief The ggml type a tensor of shape `dims` (innermost first) is stored as.
using GgufTensorTypeRule = std::function<uint32_t(const std::vector<uint64_t>& dims)>;

/// \brief A tensor already in its stored form: a ggml type and its bytes.
struct GgufEncodedTensor {
  uint32_t ggml_type = 0;     ///< ggml type id
  std::vector<uint8_t> bytes;  ///< the blocks, rows back to back
};

/// \brief Tensors given already encoded, by GGUF name (e.g. "blk.0.attn_q.weight").
using GgufEncodedTensors = std::map<std::string, GgufEncodedTensor>;

/// \brief `save_gguf` with the type chosen per tensor by `type_of` (rope_freqs and q/k/v
/// biases stay F32); the vocabulary's `pre`, `add_bos`/`add_eos` and chat template are
/// written too. A tensor named in `encoded` is written as given there instead of from
/// `model` (whose vector for it may then be empty): how quantized linears are stored without a
/// round trip through fp32. Throws `InvalidArgument` when an encoded tensor's byte count does
/// not fit its shape and type, or when a name in `encoded` is not a tensor of the file.
std::vector<uint8_t> save_gguf_typed(const Model& model, const GgufTensorTypeRule& type_of,
                                     const GgufVocabulary* vocab = nullptr,
                                     const GgufEncodedTensors* encoded = nullptr);

}  // namespace nanoserve
