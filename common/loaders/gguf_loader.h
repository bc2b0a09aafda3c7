#pragma once
/// \file
/// \brief A Llama or Qwen2 model from a GGUF file: `llama.*` / `qwen2.*` metadata ->
/// `ModelConfig`, `blk.N.*` tensors -> `Model` weights (every type of `ggml_types.h` with a
/// decoder, decoded to fp32).
///
/// Tensor names and shapes (GGUF dims are innermost first, so [cols, rows]):
///
///     token_embd.weight         [dim, vocab]        -> token_embedding (vocab, dim)
///     blk.N.attn_norm.weight    [dim]               -> layers[N].attn_norm
///     blk.N.attn_q.weight       [dim, q_dim]        -> wq (q_dim, dim)
///     blk.N.attn_k.weight       [dim, kv_dim]       -> wk
///     blk.N.attn_v.weight       [dim, kv_dim]       -> wv
///     blk.N.attn_{q,k,v}.bias   [q_dim|kv_dim]      -> bq, bk, bv (qwen2 only)
///     blk.N.attn_output.weight  [q_dim, dim]        -> wo (dim, q_dim)
///     blk.N.ffn_norm.weight     [dim]               -> ffn_norm
///     blk.N.ffn_gate.weight     [dim, hidden]       -> w1 (hidden, dim)
///     blk.N.ffn_down.weight     [hidden, dim]       -> w2 (dim, hidden)
///     blk.N.ffn_up.weight       [dim, hidden]       -> w3 (hidden, dim)
///     output_norm.weight        [dim]               -> final_norm
///     output.weight             [dim, vocab]        -> classifier; absent = tied to token_embd
///
/// RoPE: the `llama` architecture in GGUF uses adjacent pairs (ggml's "normal" RoPE). Hugging
/// Face checkpoints use rotate-half, so llama.cpp's converter permutes the rows of wq and wk
/// when writing GGUF; the file's weights therefore expect adjacent-pair rotation. `qwen2` is not
/// permuted (llama.cpp rotates it NeoX-style), so it is rotate-half.
///
/// `ARCH.rope.scaling.type` "linear" (with `rope.scaling.factor`) is read, and so is the
/// tensor `rope_freqs.weight` [head_dim / 2]: Llama 3.1+'s llama3 rule as per-pair frequency
/// divisors (`RopeScaling::freq_factors`, applied by `rope_frequencies`).
///
/// `llama.context_length` is taken as the file says. Beware that converters often write a
/// default there: stories260K.gguf says 2048, while the model was trained with 512 positions.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/loaders/gguf_file.h"
#include "common/model.h"

namespace nanoserve {

/// \brief The `ModelConfig` described by a GGUF file's `llama.*` metadata and tensor shapes.
ModelConfig gguf_model_config(const GgufFile& file);

/// \brief Where a `Model` field lives in a GGUF file: the tensor's name and its dims (innermost
/// first).
struct GgufField {
  std::string tensor;          ///< e.g. "blk.3.attn_q.weight"
  std::vector<uint64_t> dims;  ///< e.g. {dim, q_dim}
};

/// \brief The GGUF tensor of `Model` field `field` ("token_embedding", "attn_norm", "wq", …,
/// "bq", "final_norm", "classifier") of `layer` (-1 for model-wide fields), per the table of the
/// file comment. Throws `InvalidArgument` for an unknown field.
GgufField gguf_field(const ModelConfig& config, const std::string& field, int layer);

/// \brief The tensor info of `field` / `layer` in `file`, its shape checked against `config`;
/// throws `LoadError` naming the tensor when it is missing or misshapen.
const GgufTensorInfo& gguf_field_tensor(const GgufFile& file, const ModelConfig& config,
                                        const std::string& field, int layer);

/// \brief The whole `Model` of a parsed GGUF file (every tensor decoded to fp32 and checked).
Model model_from_gguf(const GgufFile& file);

/// \brief Loads a Llama GGUF file; throws `LoadError(path, field, …)` on bad input.
Model load_gguf(const std::string& path);

/// \brief Loads a Llama GGUF file held in memory; `name` stands for the file in errors.
Model load_gguf_from_memory(const uint8_t* data, size_t size, const std::string& name);

}  // namespace nanoserve
