#pragma once
/// \file
/// \brief `SpecPagedModel`: one model decoding one sequence through the kernels over its own
/// paged KV cache — a `DeviceModel`, a `ModelRunner`, a `KVCacheManager` *without* prefix
/// caching, a `PagedKVCache` and a `PagedBackend`, owned together — for speculative decoding
/// (chapter 6), where the target and every draft model keep separate caches:
///
///     target: DeviceModel ─ ModelRunner ─ PagedBackend ─ KVCacheManager/PagedKVCache (own pool)
///     draft:  DeviceModel ─ ModelRunner ─ PagedBackend ─ KVCacheManager/PagedKVCache (own pool)
///
/// Why no prefix caching: the verifier needs the logits of every row it sends, and a
/// prefix-cache hit skips rows (`PagedBackend::forward_all` refuses it). Why its own pool:
/// rollback of one model must never touch the other's blocks, and the draft's layer count
/// and storage type differ from the target's.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/engine/model/device_model.h"
#include "common/engine/kv/kv_cache_manager.h"
#include "common/engine/model/model_runner.h"
#include "common/engine/decode/paged_backend.h"
#include "common/engine/model/paged_kv_cache.h"
#include "common/speculative/rollback_backend.h"

namespace nanoserve::engine {

/// \brief Sizes of a `SpecPagedModel`'s cache and buffers.
struct SpecPagedOptions {
  int max_seq_len = 0;   ///< positions the sequence may hold (0 = the model's context)
  int block_size = 16;   ///< tokens per KV block
  /// \brief Rows of logits one pass may return: a verify chunk of γ+1 rows must fit, and the
  /// paged decode kernel takes up to 64 query rows per sequence.
  int max_logit_rows = 64;
  int max_tokens_per_step = 256;  ///< most rows of one forward (longer prompts run in chunks)
};

/// \brief A `RollbackBackend` that owns its model, runner and paged KV cache (see the file
/// comment). Not copyable; the device memory lives as long as the object.
class SpecPagedModel final : public speculative::RollbackBackend {
 public:
  /// \brief Takes `model` and allocates a pool of just enough blocks for one sequence of
  /// `options.max_seq_len` positions (one spare block: rollback and regrowth may straddle a
  /// block boundary). `label` names it in reports (default: the model's name). Throws
  /// `InvalidArgument` for bad sizes, `CudaError` when the device is full.
  SpecPagedModel(std::unique_ptr<DeviceModel> model, SpecPagedOptions options = {},
                 std::string label = "");

  /// @name RollbackBackend (forwarded to the owned `PagedBackend`)
  /// @{
  /// \brief Frees the sequence's blocks.
  void reset() override { backend_->reset(); }
  /// \brief Logits (vocab) of the last row after `tokens` at `start_pos ..`.
  std::vector<float> forward(const std::vector<int>& tokens, int start_pos) override {
    return backend_->forward(tokens, start_pos);
  }
  /// \brief Logits of every row, (T, vocab): the multi-query verification pass.
  std::vector<float> forward_all(const std::vector<int>& tokens, int start_pos) override {
    return backend_->forward_all(tokens, start_pos);
  }
  /// \brief `KVCacheManager::rollback` to `length` positions.
  void truncate(int length) override { backend_->truncate(length); }
  /// \brief Positions whose keys and values are cached.
  int length() const override { return backend_->length(); }
  /// \brief The model's vocabulary size.
  int vocab_size() const override { return backend_->vocab_size(); }
  /// \brief Positions the sequence may hold.
  int max_seq_len() const override { return backend_->max_seq_len(); }
  /// \brief The paged backend's device description.
  std::string device_name() const override { return backend_->device_name(); }
  /// \brief The label given at construction.
  std::string name() const override { return label_; }
  /// @}

  /// \brief The device weights.
  const DeviceModel& device_model() const { return *model_; }
  /// \brief The block manager (block tables, invariants, free blocks).
  const KVCacheManager& manager() const { return *manager_; }
  /// \brief The device pools (`PagedKVCache::to_host` for tests).
  const PagedKVCache& cache() const { return *cache_; }
  /// \brief The sequence id of the one sequence in `manager()`.
  std::int64_t seq_id() const { return backend_->seq_id(); }
  /// \brief Token rows pushed through the model since construction.
  std::int64_t rows_computed() const { return backend_->rows_computed(); }

 private:
  std::unique_ptr<DeviceModel> model_;
  std::unique_ptr<ModelRunner> runner_;
  std::unique_ptr<KVCacheManager> manager_;
  std::unique_ptr<PagedKVCache> cache_;
  std::unique_ptr<PagedBackend> backend_;
  std::string label_;
};

}  // namespace nanoserve::engine
