#pragma once
/// \file
/// \brief `DeviceKVCache`: the one place the forward pass meets the KV cache. It knows
/// where position p of a sequence lives and which attention kernel reads it; the layer loop in
/// `ModelRunner` knows neither.
///
/// Per forward pass, the runner calls
///
///     begin_forward(batch, staging, graph_rows)  validate, stage slot mappings/lengths
///                                                (the runner uploads the step in one copy)
///     before_pass(stream)                        what precedes the pass: block copies
///     for each layer l:                          ┐ launched one by one, or replayed as a
///       write_target(l)                          │ CUDA graph (graph_rows > 0) captured when
///                                                │ graph_key() was the same; write_target
///                                                │ says where the runner's fused RoPE + KV
///                                                │ append writes the rows' keys and values
///       attend(l, q, out)                        ┘
///
/// Chapter 1 implements it with a contiguous cache (`NaiveKVCache`); chapter 2 plugs in a paged
/// cache with block tables; chapter 4 feeds it batches of many sequences — the runner is the same.

#include <cstdint>
#include <string>
#include <vector>

#include "common/engine/model/decode_graphs.h"
#include "common/engine/model/forward_batch.h"
#include "common/engine/model/step_staging.h"
#include "kernels/cuda_compat.h"
#include "common/error.h"
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

/// \brief Where a pass writes one layer's keys and values: the (num_slots, kv_dim) K and V
/// arrays that the pass's slot mapping indexes — what `launch_rope_kv_append` (and
/// `launch_kv_append`) take. The cache decides the slots; the kernel only follows them.
///
/// \par Example
/// \snippet tests/ch02/test_examples_kv.cpp DeviceKVCache
struct KVWriteTarget {
  void* k = nullptr;            ///< (num_slots, kv_dim) keys in `dtype`, the layer's slot 0
  void* v = nullptr;            ///< (num_slots, kv_dim) values in `dtype`
  const int* slots = nullptr;   ///< (T) device slot of every row of the pass; -1 writes nothing
  std::int64_t num_slots = 0;   ///< rows of k and v from their base on
  DType dtype = DType::kF32;    ///< storage type of K and V (`KVLayout::dtype`)
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
  /// records the new lengths, and stages in `staging` whatever per-row metadata its kernels
  /// need (the runner uploads it with the rest of the step). Throws `InvalidArgument` naming
  /// the sequence and positions otherwise, before anything is staged or run.
  /// \param batch   the pass's rows, chunks, slots and block copies
  /// \param staging the step's staging; the cache adds its sections and keeps their offsets
  /// \param graph_rows 0: the pass is launched kernel by kernel over the batch's T rows.
  ///        > 0: a decode pass (one row per chunk, T <= graph_rows) replayed from a CUDA graph
  ///        of `graph_rows` rows: every launch shape and host argument of the KV write
  ///        (`write_target`) and of `attend` must then depend only on `graph_rows` (and on
  ///        what `graph_key` reports),
  ///        and rows T .. graph_rows-1 are padding — they write no KV and attend to nothing.
  virtual void begin_forward(const ForwardBatch& batch, StepStaging& staging, int graph_rows) = 0;
  /// \brief After the step's upload, before the pass: what must run first and is no part of a
  /// replayed graph (the paged cache's copy-on-write block copies), enqueued on `stream`.
  virtual void before_pass(cudaStream_t stream) { (void)stream; }
  /// \brief What the KV write (`write_target`) and `attend` take from the host besides the
  /// staged data — device addresses (pools, workspace, the staged section), launch sizes,
  /// per-chunk choices — for the pass `begin_forward` prepared. A captured graph is replayed
  /// only while this is unchanged; otherwise it is captured again.
  virtual std::vector<std::int64_t> graph_key() const = 0;
  /// \brief Where the keys (RoPE applied) and values of every row of the pass that
  /// `begin_forward` prepared go for `layer`: the layer's K and V arrays and the pass's slot
  /// mapping on the device (padding rows of a graph's pass: slot -1). Valid until the next
  /// `begin_forward`.
  virtual KVWriteTarget write_target(int layer) = 0;
  /// \brief Causal attention of every row's query over its sequence's cached keys and values
  /// (including the rows just appended) for `layer`.
  /// \param layer  block index
  /// \param q      (T, n_heads, head_dim) device queries in `act`, RoPE applied
  /// \param out    (T, n_heads, head_dim) device output in `act`
  /// \param act    storage type of q and out (the runner's activation type)
  /// \param stream CUDA stream
  virtual void attend(int layer, const void* q, void* out, DType act, cudaStream_t stream) = 0;

 protected:
  /// \brief Throws `InvalidArgument` (prefixed with `who`) unless `graph_rows` is 0, or at
  /// least the batch's rows with one row per chunk (a decode pass a graph can replay).
  static void check_graph_rows(const ForwardBatch& batch, int graph_rows, const std::string& who) {
    if (graph_rows == 0) return;
    if (graph_rows < batch.rows() || !batch.one_row_per_chunk()) {
      throw InvalidArgument(who + ": a graph of " + std::to_string(graph_rows) +
                            " rows replays decode passes of at most that many one-row chunks; "
                            "this batch has " + std::to_string(batch.rows()) + " rows in " +
                            std::to_string(batch.chunks.size()) + " chunks");
    }
  }
};

}  // namespace nanoserve::engine
