#pragma once
/// \file
/// \brief Tensor parallelism's shards (chapter 9; Megatron-LM, Shoeybi et al. 2019): which part
/// of every weight rank r of N holds, and that part as a `Model` of its own.
///
///     attention: Wq, Wk, Wv column-parallel by heads   rank r: q heads [r·H/N, (r+1)·H/N)
///                (their biases too)                            kv heads r·KV/N …, or — when KV < N —
///                                                              the one kv head its q heads read
///                                                              (replicated on N/KV ranks)
///                Wo row-parallel (its input columns)    partial x += a_r Wo_rᵀ, then all-reduce
///     MLP:       W1, W3 column-parallel (rows)          rank r: hidden [r·F/N, (r+1)·F/N)
///                W2 row-parallel (columns)              partial, then all-reduce
///     embedding: vocabulary-parallel, rows [v0, v1)     tokens elsewhere read a zero row: the
///                                                       all-reduce of the rows is the embedding
///     LM head:   vocabulary-parallel, rows [v0, v1)     logits of the slice, all-gathered
///     norms:     replicated (every rank holds the whole residual stream)
///
/// The shard is itself a Llama model (same dim and head_dim, H/N heads, F/N hidden, V/N + 1
/// vocabulary rows — the last a zero row for tokens outside the slice — and the classifier
/// tied when the model's is), so the device model, the KV cache (its kv heads only) and every
/// kernel run it unchanged; only the runner adds the collectives (`TensorParallelGroup`).

#include <string>

#include "common/model.h"

namespace nanoserve::engine {

/// \brief What rank `rank` of `size` holds.
///
/// \par Example
/// \snippet tests/ch09/test_tensor_parallel.cpp TensorParallelShard
struct TensorParallelShard {
  int rank = 0;             ///< this rank
  int size = 1;             ///< tensor-parallel degree N
  int q_head_begin = 0;     ///< first query head
  int q_heads = 0;          ///< query heads here (H / N)
  int kv_head_begin = 0;    ///< first key/value head
  int kv_heads = 0;         ///< key/value heads here (KV / N, or 1 when replicated)
  bool kv_replicated = false;  ///< KV < N: the kv heads are copied onto several ranks
  int hidden_begin = 0;     ///< first FFN row
  int hidden = 0;           ///< FFN rows here (F / N)
  int vocab_begin = 0;      ///< first vocabulary row
  int vocab = 0;            ///< vocabulary rows here (the last rank's may be fewer)
  int vocab_stride = 0;     ///< rows per rank before the last: ceil(V / N)

  /// \brief The shard of `config` held by `rank` of `size`. Throws `InvalidArgument` naming the
  /// dimension unless 1 <= rank < size, H and F are multiples of N, and KV is a multiple of N or
  /// N a multiple of KV (with the q heads of a rank inside one kv head's group).
  static TensorParallelShard of(const ModelConfig& config, int rank, int size);
  /// \brief The row of the shard's embedding that token `token` reads: token − vocab_begin
  /// inside the slice, else the zero row (`vocab`).
  int local_token(int token) const {
    return token >= vocab_begin && token < vocab_begin + vocab ? token - vocab_begin : vocab;
  }
};

/// \brief `model`'s shard for `shard` as a model of its own (see the file comment); its name
/// ends with " [tp r/N]"; its classifier is tied when `model`'s is. Throws `InvalidArgument`
/// when the shard does not belong to `model`.
Model shard_model(const Model& model, const TensorParallelShard& shard);

}  // namespace nanoserve::engine
