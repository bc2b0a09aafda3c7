#pragma once
/// \file
/// \brief `DeviceKVCache`: the one place the forward pass meets the KV cache. It knows
/// where position p of a sequence lives and which attention kernel reads it; the layer loop in
/// `ModelRunner` knows neither.
///
/// Per forward pass, the runner calls
///
///     begin_forward(batch)                       once: validate, upload slot mappings/lengths
///     for each layer l:
///       append_kv(l, k, v)                       write the rows' keys and values
///       attend(l, q, out)                        causal attention over everything cached
///
/// Chapter 1 implements it with a contiguous cache (`NaiveKVCache`); chapter 2 plugs in a paged
/// cache with block tables; chapter 4 feeds it batches of many sequences — the runner is the same.

#include "common/engine/model/forward_batch.h"
#include "kernels/cuda_compat.h"
#include "kernels/dtype.cuh"

namespace nanoserve::engine {

/// \brief The shape of the keys and values a cache stores, checked against the model.
///
/// \par Example
/// \snippet tests/ch02/test_examples_kv.cpp DeviceKVCache
struct KVLayout {
  int n_layers = 0;    ///< transformer blocks
  int n_kv_heads = 0;  ///< key/value heads per layer
  int head_dim = 0;    ///< values per head
  DType dtype = DType::kF32;  ///< storage type of K and V
};

/// \brief KV storage plus the attention kernels that read it, for the sequences of a batch.
///
/// \par Example
/// \snippet tests/ch02/test_examples_kv.cpp DeviceKVCache
class DeviceKVCache {
 public:
  virtual ~DeviceKVCache() = default;
  /// \brief What the cache stores; the runner refuses a cache that does not fit its model.
  virtual KVLayout layout() const = 0;
  /// \brief Most positions one sequence may hold.
  virtual int max_seq_len() const = 0;
  /// \brief Prepares a pass over `batch` (already validated against the vocabulary): checks
  /// that every chunk's sequence exists, continues its cached prefix without a gap and fits,
  /// records the new lengths, and uploads whatever per-row metadata its kernels need. Throws
  /// `InvalidArgument` naming the sequence and positions otherwise, before any kernel runs.
  virtual void begin_forward(const ForwardBatch& batch, cudaStream_t stream) = 0;
  /// \brief Stores the keys (RoPE applied) and values of every row of the batch for `layer`.
  /// \param layer  block index
  /// \param k      (T, n_kv_heads * head_dim) device keys in `act`
  /// \param v      (T, n_kv_heads * head_dim) device values in `act`
  /// \param act    storage type of k and v (the runner's activation type); the cache converts
  ///               them to its own `layout().dtype`
  /// \param stream CUDA stream
  virtual void append_kv(int layer, const void* k, const void* v, DType act,
                         cudaStream_t stream) = 0;
  /// \brief Causal attention of every row's query over its sequence's cached keys and values
  /// (including the rows just appended) for `layer`.
  /// \param layer  block index
  /// \param q      (T, n_heads, head_dim) device queries in `act`, RoPE applied
  /// \param out    (T, n_heads, head_dim) device output in `act`
  /// \param act    storage type of q and out (the runner's activation type)
  /// \param stream CUDA stream
  virtual void attend(int layer, const void* q, void* out, DType act, cudaStream_t stream) = 0;
};

}  // namespace nanoserve::engine
