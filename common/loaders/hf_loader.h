#pragma once
/// \file
/// \brief A Llama model from a Hugging Face directory: `config.json` + `model.safetensors`.
///
/// Only the Llama family (`model_type` "llama" / `LlamaForCausalLM`, SiLU activation, no
/// biases, no RoPE scaling) is accepted; anything else is a `LoadError` naming the key.
/// Hugging Face Llama checkpoints use the *rotate-half* RoPE convention, and their wq/wk rows
/// are laid out for it, so the config says `RopeStyle::kRotateHalf`.
///
///     config.json key            ModelConfig        default when absent
///     hidden_size                dim                required
///     intermediate_size          hidden_dim         required
///     num_hidden_layers          n_layers           required
///     num_attention_heads        n_heads            required
///     num_key_value_heads        n_kv_heads         num_attention_heads
///     head_dim                   head_dim           hidden_size / num_attention_heads
///     vocab_size                 vocab_size         required
///     max_position_embeddings    max_seq_len        required
///     rope_theta                 rope_theta         10000
///     rms_norm_eps               norm_eps           1e-6 (LlamaConfig's default)
///     tie_word_embeddings        tied_classifier    false (LlamaConfig's default)
///
///     model.safetensors tensor (row-major [rows, cols])          Model field
///     model.embed_tokens.weight                 [vocab, dim]      token_embedding
///     model.layers.N.input_layernorm.weight     [dim]             attn_norm
///     model.layers.N.self_attn.q_proj.weight    [q_dim, dim]      wq
///     model.layers.N.self_attn.k_proj.weight    [kv_dim, dim]     wk
///     model.layers.N.self_attn.v_proj.weight    [kv_dim, dim]     wv
///     model.layers.N.self_attn.o_proj.weight    [dim, q_dim]      wo
///     model.layers.N.post_attention_layernorm.weight  [dim]       ffn_norm
///     model.layers.N.mlp.gate_proj.weight       [hidden, dim]     w1
///     model.layers.N.mlp.down_proj.weight       [dim, hidden]     w2
///     model.layers.N.mlp.up_proj.weight         [hidden, dim]     w3
///     model.norm.weight                         [dim]             final_norm
///     lm_head.weight                            [vocab, dim]      classifier (untied only)
///
/// Tied embeddings: with `tie_word_embeddings` the classifier *is* the embedding, and
/// checkpoints often store that matrix once. The safetensors library then records the
/// missing name in `__metadata__` as an alias of the stored one (TinyStories-656K stores only
/// `lm_head.weight` and maps `model.embed_tokens.weight` to it), so a tensor name is looked up
/// directly, then through that alias, and for a tied model the embedding finally falls back to
/// `lm_head.weight`.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/model.h"

namespace nanoserve {

/// \brief The `ModelConfig` of a Hugging Face `config.json` text; `file` names it in errors.
ModelConfig parse_hf_config(const std::string& json_text, const std::string& file);

/// \brief Loads `dir/config.json` and `dir/model.safetensors` (sharded checkpoints are rejected
/// with a clear error); throws `LoadError(file, field, …)`.
Model load_hf_model(const std::string& dir);

/// \brief Loads a model from a `config.json` text and safetensors bytes held in memory;
/// `name` stands for the directory in errors ("name/config.json", "name/model.safetensors").
Model load_hf_from_memory(const std::string& config_json, const uint8_t* safetensors,
                          size_t safetensors_size, const std::string& name);

/// \brief The two files of a Hugging Face checkpoint, in memory.
struct HfCheckpoint {
  std::string config_json;           ///< config.json text
  std::vector<uint8_t> safetensors;  ///< model.safetensors bytes
};

/// \brief `model` as a Hugging Face Llama checkpoint with tensors stored as `dtype` ("F32",
/// "F16" or "BF16"); a tied model stores only `model.embed_tokens.weight`. Throws
/// `InvalidArgument` for an adjacent-pair model (its wq/wk rows would need permuting) or an
/// unknown dtype.
HfCheckpoint save_hf(const Model& model, const std::string& dtype);

}  // namespace nanoserve
