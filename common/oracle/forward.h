#pragma once
/// \file
/// \brief The whole Llama-family forward pass on the CPU (fp32, Eigen): the reference every
/// engine path and chapter is validated against.
///
/// One block, for rows x (T, dim) at positions p .. p+T-1 (llama2.c `forward`, batched):
///
///     xn  = rmsnorm(x, attn_norm)                 ─► hook kAttention   (T, dim)
///     q   = xn Wqᵀ, k = xn Wkᵀ, v = xn Wvᵀ        (T, q_dim), (T, kv_dim), (T, kv_dim)
///     q += bq, k += bk, v += bv                   only with attention_bias (Qwen2)
///     rope(q), rope(k)                            at positions p .. p+T-1, by the
///                                                 frequencies of rope_frequencies(config)
///     KV[layer][p .. p+T-1] = k, v
///     a   = attention(q, KV keys 0 .. p+T-1)      ─► hook kAttentionOut (T, q_dim)
///     x  += a Woᵀ
///     xn  = rmsnorm(x, ffn_norm)                  ─► hook kFfn         (T, dim)
///     h   = swiglu(xn W1ᵀ, xn W3ᵀ)                ─► hook kFfnHidden   (T, hidden_dim)
///     x  += h W2ᵀ                                 ─► on_block_output   (T, dim)
///
/// then `logits = rmsnorm(x, final_norm) Wclsᵀ` (hook kClassifier, layer = n_layers).

#include <functional>
#include <vector>

#include "common/model.h"
#include "common/oracle/kv_store.h"

namespace nanoserve::oracle {

/// \brief The activations that feed the model's linear layers, named by the weights that
/// read them (the quantization chapter calibrates each weight on its input).
enum class LinearInput {
  kAttention,     ///< attention-RMSNorm output, read by wq, wk, wv: (rows, dim)
  kAttentionOut,  ///< attention output, read by wo: (rows, q_dim)
  kFfn,           ///< FFN-RMSNorm output, read by w1, w3: (rows, dim)
  kFfnHidden,     ///< silu(w1 x) * (w3 x), read by w2: (rows, hidden_dim)
  kClassifier,    ///< final-RMSNorm output, read by the classifier: (rows, dim)
};

/// \brief Returns "attention", "attention_out", "ffn", "ffn_hidden" or "classifier".
const char* to_string(LinearInput which);

/// \brief Optional observers of a forward pass. Each is called synchronously with a view
/// that is valid only during the call; an empty `std::function` is skipped at no cost.
struct ForwardHooks {
  /// \brief `x` (rows, cols) row-major is the input of the linear layers `which` names in
  /// block `layer` (`layer == n_layers` for `kClassifier`). Rows are the pass's tokens in order.
  std::function<void(int layer, LinearInput which, const float* x, int rows, int cols)>
      on_linear_input;
  /// \brief `x` (rows, dim) is the residual stream after block `layer`.
  std::function<void(int layer, const float* x, int rows, int dim)> on_block_output;
};

/// \brief Runs `tokens` at positions `start_pos .. start_pos + T - 1`, reading the cached keys
/// and values of positions `0 .. start_pos - 1` from `kv` and writing its own; returns the
/// logits of every row, (T, vocab_size) row-major (row t predicts the token after tokens[t]).
///
/// Afterwards `kv.length() == start_pos + T`: positions past it are forgotten, so re-running
/// from an earlier `start_pos` overwrites (rolls back) the tail. `model` must have passed
/// `Model::validate()`. Throws `InvalidArgument` if `tokens` is empty, a token id is outside
/// the vocabulary, `start_pos > kv.length()`, the positions exceed `kv.capacity()`, or `kv`
/// was made for a different shape.
std::vector<float> forward_prompt(const Model& model, KVStore& kv,
                                  const std::vector<int>& tokens, int start_pos,
                                  const ForwardHooks* hooks = nullptr);

/// \brief `forward_prompt` from position 0 in a fresh `KVStore` sized to the prompt:
/// the logits (T, vocab_size) of a self-contained sequence.
std::vector<float> forward_prompt(const Model& model, const std::vector<int>& tokens,
                                  const ForwardHooks* hooks = nullptr);

/// \brief One decode step: the logits (vocab_size) of `token` at position `pos`
/// (`forward_prompt` with a single token; `pos <= kv.length()`).
std::vector<float> forward_token(const Model& model, KVStore& kv, int token, int pos,
                                 const ForwardHooks* hooks = nullptr);

}  // namespace nanoserve::oracle
