#pragma once
/// \file
/// \brief `PagedKVCache`: the device side of chapter 2's paged KV cache — one pool of
/// fixed-size KV blocks per layer, addressed through the block tables a `KVCacheManager`
/// keeps on the host, and the PagedAttention kernels that read it (`DeviceKVCache`). It never
/// sees the manager: each pass's `ForwardBatch` carries the block tables, slots and copies.
///
/// Host and device split the work the way an OS and its MMU do:
///
///     KVCacheManager (host)                 PagedKVCache (device)
///     ─────────────────────                 ─────────────────────
///     which physical blocks a sequence      K and V pools, stacked over layers:
///     owns (BlockTable), prefix cache,      (n_layers, num_blocks, block_size, kv_dim)
///     ref counts, copy-on-write decisions   slot = block * block_size + offset
///
/// Per forward pass (`ModelRunner::forward`):
///
///     begin_forward   checks the plan (every row's slot is where its chunk's block table
///                     puts it; blocks inside the pool), then stages slot mapping, block
///                     tables, context lengths and the copy-on-write pairs in the step's
///                     staging (one upload with the rest of the step, `StepStaging`)
///     before_pass     the block copies, enqueued on the stream behind the upload (no sync)
///     write_target(l) where the paged KV write goes: row r's K/V → slot_mapping[r] of
///                     layer l's pool (the runner's fused RoPE + KV append writes it)
///     attend(l)       every chunk the same length q ≤ 16 (decode, speculative verification):
///                     paged decode (split-K over long contexts); otherwise the varlen paged
///                     prefill kernel, which also serves mixed prefill + decode batches
///
/// The block tables come from the scheduler's `KVCacheManager` (or a decoder's), which must
/// have reserved every slot a batch writes (`allocate` / `append_slots`).
///
/// For a decode pass replayed by a CUDA graph of `graph_rows` rows (`DecodeGraphs`), every
/// shape depends only on `graph_rows`: the block tables are `ceil(max_seq_len / block_size)`
/// wide whatever the sequences' lengths, and the padding rows past the batch's get slot -1
/// (the KV write skips them) and context length 0 (attention gives them zeros):
///
///     graph of 4 rows, batch of 3,     slots        lens   block tables (max_blocks wide)
///     block size 8
///       row 0  seq 7, position 17      [ 4*8+1,     18,    [ 3, 9, 4, 0, 0, … ]
///       row 1  seq 2, position 5         6*8+5,     6,     [ 6, 0, 0, … ]
///       row 2  seq 5, position 8         1*8+0,     9,     [ 8, 1, 0, … ]
///       row 3  padding                   -1 ]       0      [ 0, … ]  (never read)
#include <cstdint>
#include <vector>

#include <string>

#include "common/engine/kv/kv_cache_block.h"
#include "common/engine/model/device_kv_cache.h"
#include "common/model_config.h"
#include "kernels/device_buffer.h"

namespace nanoserve::engine {

/// \brief Paged K/V pools on the device: `num_blocks` blocks of `block_size` positions.
///
/// \par Example
/// \snippet tests/ch02/test_examples_kv.cpp PagedKVCache
class PagedKVCache final : public DeviceKVCache {
 public:
  /// \brief Allocates pools of `num_blocks` blocks of `block_size` positions (the block
  /// manager's sizes) in storage type `dtype`; sequences may hold up to `max_seq_len`
  /// positions (0 = the model's context). Throws `InvalidArgument` for sizes < 1, a
  /// `max_seq_len` outside [1, config.max_seq_len] or a pool whose slots do not fit int32
  /// slot ids, `CudaError` when the device is full.
  PagedKVCache(const ModelConfig& config, DType dtype, int num_blocks, int block_size,
               int max_seq_len = 0);

  /// @name DeviceKVCache
  /// @{
  /// \brief Layers, heads, head width and storage type of the pools.
  KVLayout layout() const override { return layout_; }
  /// \brief Most positions one sequence may hold.
  int max_seq_len() const override { return max_seq_len_; }
  /// \brief Checks the plan (one slot per row, each where its chunk's block table puts it; a
  /// sequence once; blocks inside the pool; positions within `max_seq_len`; `graph_rows` 0 or
  /// a padded decode), then stages the slot mapping, block tables, context lengths and the
  /// block copies' pairs. Throws `InvalidArgument` before anything is staged otherwise.
  void begin_forward(const ForwardBatch& batch, StepStaging& staging, int graph_rows) override;
  /// \brief The batch's copy-on-write block copies (every layer, K and V), on `stream`.
  void before_pass(cudaStream_t stream) override;
  /// \brief Pools, the staged section, the workspace, and the pass's sizes.
  std::vector<std::int64_t> graph_key() const override;
  /// \brief Layer `layer`'s pools and the pass's slot mapping.
  KVWriteTarget write_target(int layer) override;
  /// \brief One PagedAttention launch for the whole batch (decode or varlen prefill).
  void attend(int layer, const void* q, void* out, DType act, cudaStream_t stream) override;
  /// @}

  /// \brief Device bytes of the K and V pools.
  std::int64_t pool_bytes() const;
  /// \brief Sets every key and value of the pools to zero, on `stream` (fresh device memory
  /// holds anything; a benchmark that reserves context without computing it needs defined
  /// values).
  void zero(cudaStream_t stream = 0);
  /// \brief Whether the last `attend` used the decode kernel (else the varlen prefill one).
  bool last_pass_was_decode() const { return decode_q_len_ > 0; }
  /// \brief The cached keys (`values == false`) or values of `layer`, positions
  /// 0 .. `length`-1 of the sequence whose block table is `block_ids`, widened to fp32:
  /// (length, n_kv_heads, head_dim). For tests.
  std::vector<float> to_host(const std::vector<int>& block_ids, int layer, int length,
                             bool values) const;
  /// @name Moving blocks between instances (chapter 9's disaggregated prefill and decode;
  /// paged_kv_cache_transfer.cpp)
  /// @{

  /// \brief Bytes of one packed block: its keys and values in every layer,
  /// (2, n_layers, block_size, kv_dim) in the pools' storage type.
  std::size_t packed_block_bytes() const;
  /// \brief Copies blocks `block_ids`, in that order, into `dst` — (blocks, 2, n_layers,
  /// block_size, kv_dim), one packed block after another — on `stream`. Throws
  /// `InvalidArgument` for a block outside the pool.
  void pack_blocks(const std::vector<int>& block_ids, void* dst, cudaStream_t stream) const;
  /// \brief The reverse of `pack_blocks`: block `block_ids[i]` of every layer, K and V, becomes
  /// packed block i of `src`, on `stream`. Throws `InvalidArgument` for a block outside the pool.
  void unpack_blocks(const std::vector<int>& block_ids, const void* src, cudaStream_t stream);
  /// @}

  /// \brief Blocks in each pool.
  int num_blocks() const { return num_blocks_; }
  /// \brief Bytes of one block of one layer's K pool (V's are the same size):
  /// block_size × kv_dim × the element size.
  std::int64_t block_bytes() const;
  /// \brief Device address of block `block` of layer `layer`'s K (`values` false) or V pool,
  /// for whole-block copies (swap preemption, `HostKVPool`). Throws `InvalidArgument` outside
  /// the pool.
  unsigned char* block_data(int layer, int block, bool values);
  /// \brief Positions per block.
  int block_size() const { return block_size_; }

 private:
  std::int64_t layer_rows() const;  // slots per layer: num_blocks * block_size
  void check_block(int block, const std::string& what) const;  // InvalidArgument if outside
  const int* slots() const;  // the staged section on the device

  int n_heads_;
  KVLayout layout_;
  int max_seq_len_;
  int num_blocks_;
  int block_size_;
  DeviceBuffer<unsigned char> k_;  // (n_layers, num_blocks, block_size, kv_dim) in dtype
  DeviceBuffer<unsigned char> v_;  // same

  DeviceBuffer<float> workspace_;  // split-K scratch of paged decode (grows, never shrinks)

  // Per forward pass:
  int rows_ = 0;                 // T, or the graph's rows
  int batch_ = 0;                // chunks (and one per padding row)
  int max_blocks_ = 0;           // row length of the staged block tables
  int max_q_len_ = 0;            // longest chunk
  int decode_q_len_ = 0;         // > 0: every chunk has this many rows and the decode kernel runs
  int num_copies_ = 0;           // copy-on-write copies of before_pass
  const StepStaging* staging_ = nullptr;  // where the metadata below was staged
  std::size_t meta_ = 0;   // staged: slot mapping (rows) | block tables | context lens | cu_seqlens
  std::size_t pairs_ = 0;  // staged: (num_copies, 2) copy-on-write (src, dst)
};

}  // namespace nanoserve::engine
