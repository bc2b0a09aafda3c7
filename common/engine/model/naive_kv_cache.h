#pragma once
/// \file
/// \brief `NaiveKVCache`: the classic contiguous KV cache. Every request reserves a whole
/// `max_seq_len` region the moment it starts, whether it will use 10 positions or all of them
/// (Hugging Face's static cache, FasterTransformer) — simple, fast to index, and wasteful:
/// the waste is what chapter 2's paged cache removes.
///
/// Memory, for K and for V, one device allocation for `num_regions` requests:
///
///     (num_regions, n_layers, max_seq_len, n_kv_heads, head_dim)
///      └ region s: one request's region (n_layers, max_seq_len, n_kv_heads, head_dim),
///        reserved in full by allocate(), returned by free()
///
///     region s, layer l:   [ p0 p1 p2 … p(len-1) | ……… reserved, never used ……… ]
///                          used (length(s))      max_seq_len - length(s) rows wasted
///
/// Key of position p, head g, in region s, layer l:
/// `k[(((s * n_layers + l) * max_seq_len + p) * n_kv_heads + g) * head_dim + …]`.
/// Counted in rows of kv_dim = n_kv_heads × head_dim values, that is row
/// `(s * n_layers + l) * max_seq_len + p` — the "slot mapping" the KV write follows.
/// Which regions are taken and how full they are is kept by a `KVRegionTable`.

#include <cstdint>
#include <vector>

#include "common/engine/model/device_kv_cache.h"
#include "common/engine/kv/kv_region_table.h"
#include "common/model_config.h"
#include "kernels/device_buffer.h"

namespace nanoserve::engine {

/// \brief Contiguous per-request KV storage with reserved-versus-used accounting, and the
/// attention kernels that read it (`DeviceKVCache`).
///
/// \par Example
/// \snippet tests/ch01/test_examples_model.cpp NaiveKVCache
class NaiveKVCache final : public DeviceKVCache {
 public:
  /// \brief Allocates K and V for `num_regions` requests of up to `max_seq_len` positions each
  /// (`max_seq_len` 0 = the model's context) in storage type `dtype`. Throws `InvalidArgument`
  /// for a `max_seq_len` outside [1, config.max_seq_len] or `num_regions < 1`, `CudaError` when
  /// the device is full.
  NaiveKVCache(const ModelConfig& config, DType dtype, int max_seq_len = 0, int num_regions = 1);

  /// @name Request lifecycle (see KVRegionTable)
  /// @{

  /// \brief True when a region is free.
  bool can_allocate() const { return regions_.can_allocate(); }
  /// \brief Reserves the lowest free region — its whole region — for a new request at length 0.
  int allocate() { return regions_.allocate(); }
  /// \brief Returns `region` to the free list.
  void free(int region) { regions_.free(region); }
  /// \brief Forgets positions `length ..` of `region` (0 restarts the request in place).
  void truncate(int region, int length) { regions_.truncate(region, length); }
  /// \brief Positions cached in `region` (the next position it will write).
  int length(int region) const { return regions_.length(region); }
  /// \brief The region bookkeeping and reserved/used accounting.
  const KVRegionTable& regions() const { return regions_; }
  /// @}

  /// @name DeviceKVCache
  /// @{

  /// \brief Layers, heads, head width and storage type of the cache.
  KVLayout layout() const override { return layout_; }
  /// \brief Positions per region.
  int max_seq_len() const override { return regions_.max_seq_len(); }
  /// \brief Checks each chunk (`seq` is an allocated region, used once, continuing its cached
  /// prefix, fitting in `max_seq_len`; `graph_rows` 0 or a padded decode), records the new
  /// lengths (an earlier `start_pos` rolls the tail back) and stages the slot mapping (-1 for
  /// padding rows) and attention lengths.
  void begin_forward(const ForwardBatch& batch, StepStaging& staging, int graph_rows) override;
  /// \brief The cache, the staged section, the workspace, the rows and each chunk's region (a
  /// graph captured for region 0 must not replay for region 1).
  std::vector<std::int64_t> graph_key() const override;
  /// \brief Layer `layer` of every region, from region 0 on, and the pass's slot mapping.
  KVWriteTarget write_target(int layer) override;
  /// \brief Per chunk: decode attention for a single row, prefill attention for several.
  void attend(int layer, const void* q, void* out, DType act, cudaStream_t stream) override;
  /// @}

  /// \brief The cached keys (`values == false`) or values of `region`, `layer`, positions
  /// 0 .. length-1, widened to fp32: (length, n_kv_heads, head_dim). For tests.
  std::vector<float> to_host(int region, int layer, bool values) const;

 private:
  std::int64_t region_row(int region, int layer) const;  // first kv row of (region, layer)

  int n_heads_;
  KVLayout layout_;
  KVRegionTable regions_;
  DeviceBuffer<unsigned char> k_;   // (num_regions, n_layers, max_seq_len, kv_dim) in dtype
  DeviceBuffer<unsigned char> v_;   // same
  DeviceBuffer<float> workspace_;   // split-K scratch of decode attention (one sequence)
  // Per forward pass:
  std::vector<SequenceChunk> chunks_;  // the batch's chunks
  int rows_ = 0;                       // T, or the graph's rows
  std::vector<int> host_mapping_;      // (rows) kv row of every input row, from layer 0's base
  std::vector<int> host_lens_;         // (chunks) keys each chunk's last row attends to
  const StepStaging* staging_ = nullptr;  // where they were staged
  std::size_t meta_ = 0;                  // staged: slot mapping (rows) | lengths (chunks)
};

}  // namespace nanoserve::engine
