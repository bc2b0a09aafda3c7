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
///                     puts it; blocks inside the pool), performs the block copies, then
///                     uploads slot mapping, block tables and context lengths in one copy
///     append_kv(l)    paged KV write: row r's K/V → slot_mapping[r] of layer l's pool
///     attend(l)       every chunk the same length q ≤ 16 (decode, speculative verification):
///                     paged decode (split-K over long contexts); otherwise the varlen paged
///                     prefill kernel, which also serves mixed prefill + decode batches
///
/// The block tables come from the scheduler's `KVCacheManager` (or a decoder's), which must
/// have reserved every slot a batch writes (`allocate` / `append_slots`).
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
  /// sequence once; blocks inside the pool; positions within `max_seq_len`), performs the
  /// batch's block copies, then uploads the slot mapping, block tables and context lengths.
  /// Throws `InvalidArgument` before anything is copied or uploaded otherwise.
  void begin_forward(const ForwardBatch& batch, cudaStream_t stream) override;
  /// \brief One paged KV write for all rows of the batch into layer `layer`'s pools.
  void append_kv(int layer, const void* k, const void* v, DType act,
                 cudaStream_t stream) override;
  /// \brief One PagedAttention launch for the whole batch (decode or varlen prefill).
  void attend(int layer, const void* q, void* out, DType act, cudaStream_t stream) override;
  /// @}

  /// \brief Device bytes of the K and V pools.
  std::int64_t pool_bytes() const;
  /// \brief Whether the last `attend` used the decode kernel (else the varlen prefill one).
  bool last_pass_was_decode() const { return decode_q_len_ > 0; }
  /// \brief The cached keys (`values == false`) or values of `layer`, positions
  /// 0 .. `length`-1 of the sequence whose block table is `block_ids`, widened to fp32:
  /// (length, n_kv_heads, head_dim). For tests.
  std::vector<float> to_host(const std::vector<int>& block_ids, int layer, int length,
                             bool values) const;
  /// \brief Blocks in each pool.
  int num_blocks() const { return num_blocks_; }
  /// \brief Positions per block.
  int block_size() const { return block_size_; }

 private:
  std::int64_t layer_rows() const;  // slots per layer: num_blocks * block_size
  void check_block(int block, const std::string& what) const;  // InvalidArgument if outside
  // Copy-on-write copies (every layer, K and V) on `stream`, before the pass writes.
  void copy_blocks(const std::vector<BlockCopy>& copies, cudaStream_t stream);

  int n_heads_;
  KVLayout layout_;
  int max_seq_len_;
  int num_blocks_;
  int block_size_;
  DeviceBuffer<unsigned char> k_;  // (n_layers, num_blocks, block_size, kv_dim) in dtype
  DeviceBuffer<unsigned char> v_;  // same

  // Per forward pass (host copies are the sources of asynchronous uploads, kept alive):
  int rows_ = 0;                 // T
  int batch_ = 0;                // chunks
  int max_blocks_ = 0;           // row length of the uploaded block tables
  int max_q_len_ = 0;            // longest chunk
  int decode_q_len_ = 0;         // > 0: every chunk has this many rows and the decode kernel runs
  std::vector<int> host_meta_;   // slot mapping | block tables | context lens | cu_seqlens
  DeviceBuffer<int> meta_;       // the same, on the device
  DeviceBuffer<float> workspace_;  // split-K scratch of paged decode
  std::vector<int> host_pairs_;    // (copies, 2) of copy_blocks
  DeviceBuffer<int> pairs_;
};

}  // namespace nanoserve::engine
