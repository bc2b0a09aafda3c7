#pragma once
/// \file
/// \brief A Llama model from a Hugging Face directory: `config.json` + `model.safetensors`.
///
/// Accepted families: `model_type` "llama" / `LlamaForCausalLM`, "qwen2" / `Qwen2ForCausalLM`
/// (q/k/v biases, always present in that architecture) and "mistral" / `MistralForCausalLM`;
/// SiLU activation; `rope_scaling` absent, "default", "linear" or "llama3". Anything else
/// (o_proj or MLP biases, YaRN, Qwen2's sliding window) is a `LoadError` naming the key.
/// Mistral's `sliding_window`, when set, limits `max_seq_len` to the window (inside it the
/// attention is plain causal attention, so the model is exact there). All three use the
/// *rotate-half* RoPE convention, and their wq/wk rows are laid out for it, so the config says
/// `RopeStyle::kRotateHalf`.
///
/// A checkpoint is one `model.safetensors` or shards listed by `model.safetensors.index.json`
/// (`{"weight_map": {"tensor name": "model-00001-of-00002.safetensors", …}}`): each shard is
/// memory-mapped and its tensors decoded to fp32 one at a time.
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
///     rope_scaling               rope_scaling       none ({"rope_type": "llama3", "factor",
///                                                   "low_freq_factor", "high_freq_factor",
///                                                   "original_max_position_embeddings"} or
///                                                   {"rope_type": "linear", "factor"})
///     model_type                 architecture       required (or architectures[])
///
///     model.safetensors tensor (row-major [rows, cols])          Model field
///     model.embed_tokens.weight                 [vocab, dim]      token_embedding
///     model.layers.N.input_layernorm.weight     [dim]             attn_norm
///     model.layers.N.self_attn.q_proj.weight    [q_dim, dim]      wq
///     model.layers.N.self_attn.k_proj.weight    [kv_dim, dim]     wk
///     model.layers.N.self_attn.v_proj.weight    [kv_dim, dim]     wv
///     model.layers.N.self_attn.{q,k,v}_proj.bias [q_dim|kv_dim]   bq, bk, bv (qwen2 only)
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
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/model.h"

namespace nanoserve {

/// \brief The `ModelConfig` of a Hugging Face `config.json` text; `file` names it in errors.
ModelConfig parse_hf_config(const std::string& json_text, const std::string& file);

/// \brief Loads `dir/config.json` and `dir/model.safetensors`, or, when that file is absent,
/// every shard `dir/model.safetensors.index.json` names (each memory-mapped); throws
/// `LoadError(file, field, …)`.
Model load_hf_model(const std::string& dir);

/// \brief A checkpoint directory opened to be read tensor by tensor: its files memory-mapped
/// and validated (as `load_hf_model` validates them), nothing decoded yet. What uploading to a
/// device needs: `DeviceModel`'s streaming constructor calls `read` once per tensor, so the
/// host holds one tensor in fp32 at a time instead of the whole model.
class HfCheckpointReader {
 public:
  /// \brief Opens `dir`; throws `LoadError` for a bad config, index or shard.
  explicit HfCheckpointReader(const std::string& dir);
  ~HfCheckpointReader();
  HfCheckpointReader(const HfCheckpointReader&) = delete;
  HfCheckpointReader& operator=(const HfCheckpointReader&) = delete;
  /// \brief The model's shape (`parse_hf_config` of its config.json).
  const ModelConfig& config() const;
  /// \brief The fp32 values of `Model` field `field` ("token_embedding", "attn_norm", "wq",
  /// …, "bq", "final_norm", "classifier") of `layer` (-1 for model-wide tensors), decoded from
  /// its stored dtype; its mapped pages are then released from this process's resident memory
  /// (`madvise(MADV_DONTNEED)`; they stay in the page cache). Throws `LoadError` naming the
  /// tensor when it is missing or misshapen.
  std::vector<float> read(const std::string& field, int layer) const;
  /// \brief Elements `[offset, offset + count)` of that tensor (row-major; clipped at its end),
  /// decoded to fp32; only those bytes are read, and their pages released afterwards: what
  /// `DeviceModel`'s streaming constructor asks for, so even the largest tensor never exists
  /// whole in fp32 on the host.
  std::vector<float> read(const std::string& field, int layer, std::size_t offset,
                          std::size_t count) const;
  /// \brief Every tensor decoded: the whole fp32 `Model`.
  Model model() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// \brief One shard of a sharded checkpoint, in memory: its file name (as the index spells
/// it) and bytes.
struct HfShard {
  std::string file;             ///< e.g. "model-00001-of-00002.safetensors"
  const uint8_t* data;          ///< the shard's bytes (outlive the load)
  size_t size;                  ///< their count
};

/// \brief The shard file names of a `model.safetensors.index.json` text, each once, in order
/// of first appearance; throws `LoadError(file, …)` for a missing or empty `weight_map`, a
/// non-string entry or a name that is not a plain file name ("../x", "a/b").
std::vector<std::string> hf_index_shards(const std::string& index_json, const std::string& file);

/// \brief Loads a sharded checkpoint held in memory. Every shard the index names must be in
/// `shards`, each tensor of the index in the shard it names, every stored tensor listed in
/// the index, and no tensor stored twice; otherwise `LoadError`. `name` stands for the
/// directory in errors.
Model load_hf_sharded_from_memory(const std::string& config_json, const std::string& index_json,
                                  const std::vector<HfShard>& shards, const std::string& name);

/// \brief Loads a model from a `config.json` text and safetensors bytes held in memory;
/// `name` stands for the directory in errors ("name/config.json", "name/model.safetensors").
Model load_hf_from_memory(const std::string& config_json, const uint8_t* safetensors,
                          size_t safetensors_size, const std::string& name);

/// \brief The two files of a Hugging Face checkpoint, in memory.
struct HfCheckpoint {
  std::string config_json;           ///< config.json text
  std::vector<uint8_t> safetensors;  ///< model.safetensors bytes
};

/// \brief The `config.json` text of a checkpoint with `config` whose tensors are stored as
/// `dtype` ("F32", "F16" or "BF16"): the architecture's class, shapes, RoPE (with
/// `rope_scaling`), `tie_word_embeddings`, `torch_dtype`.
std::string hf_config_json(const ModelConfig& config, const std::string& dtype);

/// \brief `model` as a Hugging Face checkpoint of its architecture (`LlamaForCausalLM`,
/// `Qwen2ForCausalLM` with its q/k/v biases, `MistralForCausalLM`; `rope_scaling` written
/// out) with tensors stored as `dtype` ("F32", "F16" or "BF16"); a tied model stores only
/// `model.embed_tokens.weight`. Throws `InvalidArgument` for an adjacent-pair model (its
/// wq/wk rows would need permuting) or an unknown dtype.
HfCheckpoint save_hf(const Model& model, const std::string& dtype);

/// \brief A sharded Hugging Face checkpoint in memory.
struct HfShardedCheckpoint {
  std::string config_json;  ///< config.json text
  std::string index_json;   ///< model.safetensors.index.json text
  /// \brief (file name, bytes) of each shard, "model-0000i-of-0000n.safetensors"
  std::vector<std::pair<std::string, std::vector<uint8_t>>> shards;
};

/// \brief `save_hf`'s checkpoint split into `n_shards` files of consecutive tensors of about
/// equal size, with the index that maps every tensor to its shard (the layout of
/// `save_pretrained(max_shard_size=…)`). Throws `InvalidArgument` unless 1 <= n_shards <=
/// the number of tensors.
HfShardedCheckpoint save_hf_sharded(const Model& model, const std::string& dtype, int n_shards);

}  // namespace nanoserve
