#pragma once
/// \file
/// \brief `PagedDecoder`: one sequence decoded through the kernels over a paged KV cache
/// (`KVCacheManager` + `PagedKVCache`) — chapter 2's cache behind the same `Decoder`
/// interface chapter 1's `NaiveDecoder` implements, so `generate()` runs unchanged, plus the
/// rollback speculative decoding needs (chapter 6).
///
///     forward(tokens, 0)   new sequence: manager.allocate — a prefix-cache hit skips the
///                          cached full blocks; only the rest of the prompt is computed
///     forward({x}, p)      manager.append_slot (copy-on-write first if the last block is
///                          shared), then one decode row
///     truncate(n)          manager.rollback: forget rejected draft positions
///     reset()              manager.free: blocks go back to the pool (full ones stay cached,
///                          so the next request with the same prefix hits them)
///
/// Two ways to build one:
///
///     shared   PagedDecoder(runner, manager, cache, seq_id) — several decoders, one pool
///              (chapter 2's multi-turn chats and parallel samples hit each other's prefixes)
///     owning   PagedDecoder(std::move(model), options) — its own DeviceModel, ModelRunner,
///              KVCacheManager *without* prefix caching and PagedKVCache (chapter 6):
///
///     target: DeviceModel ─ ModelRunner ─ PagedDecoder ─ KVCacheManager/PagedKVCache (own pool)
///     draft:  DeviceModel ─ ModelRunner ─ PagedDecoder ─ KVCacheManager/PagedKVCache (own pool)
///
/// Why no prefix caching when owning: the verifier needs the logits of every row it sends, and
/// a prefix-cache hit skips rows (`forward_all` refuses it). Why its own pool: rollback of one
/// model must never touch the other's blocks, and a draft's layer count and storage type differ
/// from the target's.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/engine/kv/kv_cache_manager.h"
#include "common/engine/model/device_model.h"
#include "common/engine/model/model_runner.h"
#include "common/engine/model/paged_kv_cache.h"
#include "common/speculative/rollback_decoder.h"

namespace nanoserve::engine {

/// \brief Sizes of an owning `PagedDecoder`'s cache and buffers.
///
/// \par Example
/// \snippet tests/ch02/test_examples_kv.cpp PagedDecoder
struct PagedDecoderOptions {
  int max_seq_len = 0;   ///< positions the sequence may hold (0 = the model's context)
  int block_size = 16;   ///< tokens per KV block
  /// \brief Rows of logits one pass may return: a verify chunk of γ+1 rows must fit.
  int max_logit_rows = 64;
  int max_tokens_per_step = 256;  ///< most rows of one forward (longer prompts run in chunks)
  std::optional<DType> activation_dtype;  ///< activations; unset = the model's storage type
  std::optional<DType> kv_dtype;          ///< KV cache; unset = the activation type
};

/// \brief A single-sequence `RollbackDecoder` over paged KV, shared with other decoders or
/// owned (see the file comment). Not copyable.
///
/// \par Example
/// \snippet tests/ch02/test_examples_kv.cpp PagedDecoder
class PagedDecoder final : public speculative::RollbackDecoder {
 public:
  /// \brief Decodes sequence `seq_id` of `manager` (which must not hold that id yet). Several
  /// decoders may share one runner, manager and cache; all three must outlive it.
  PagedDecoder(ModelRunner& runner, KVCacheManager& manager, PagedKVCache& cache,
               std::int64_t seq_id);
  /// \brief Takes `model` and allocates a pool of just enough blocks for one sequence of
  /// `options.max_seq_len` positions (one spare block: rollback and regrowth may straddle a
  /// block boundary), without prefix caching. `label` names it in reports (default: the
  /// model's name). Throws `InvalidArgument` for bad sizes, `CudaError` when the device is full.
  explicit PagedDecoder(std::unique_ptr<DeviceModel> model, PagedDecoderOptions options = {},
                        std::string label = "");
  /// \brief Frees the sequence's blocks.
  ~PagedDecoder() override;
  PagedDecoder(const PagedDecoder&) = delete;
  PagedDecoder& operator=(const PagedDecoder&) = delete;

  /// \brief Frees the sequence's blocks; the next forward starts a new sequence at 0.
  void reset() override;
  /// \brief Logits (vocab) after `tokens` at `start_pos ..` (`start_pos <= length()`; a smaller
  /// one rolls back first). A new sequence takes its cached prefix from the prefix cache.
  /// Throws `InvalidArgument` for bad positions, `BlockPoolExhausted` (nothing changed) when
  /// the pool is full.
  std::vector<float> forward(const std::vector<int>& tokens, int start_pos) override;
  /// \brief Logits of every row, (T, vocab): the multi-query verification pass. Every row is
  /// computed, so a new sequence whose prefix is in the prefix cache is refused
  /// (`InvalidArgument`; use `forward`, or a manager without prefix caching, as an owning
  /// decoder has).
  std::vector<float> forward_all(const std::vector<int>& tokens, int start_pos) override;
  /// \brief `manager.rollback` of the positions `length ..`.
  void truncate(int length) override;
  /// \brief Positions whose keys and values are cached.
  int length() const override { return static_cast<int>(seq_.token_ids.size()); }
  /// \brief The model's vocabulary size.
  int vocab_size() const override;
  /// \brief The cache's `max_seq_len`.
  int max_seq_len() const override { return cache_->max_seq_len(); }
  /// \brief e.g. "CPU simulator (…) · kernels, fp32 weights, paged KV (block 16)".
  std::string device_name() const override;
  /// \brief The label given at construction, or the model's name.
  std::string name() const override;

  /// \brief The device weights.
  const DeviceModel& device_model() const { return runner_->model(); }
  /// \brief The block manager (block tables, invariants, free blocks).
  const KVCacheManager& manager() const { return *manager_; }
  /// \brief The device pools (`PagedKVCache::to_host` for tests).
  const PagedKVCache& cache() const { return *cache_; }
  /// \brief The sequence id in the manager.
  std::int64_t seq_id() const { return seq_.seq_id; }
  /// \brief Token rows pushed through the model since construction.
  std::int64_t rows_computed() const { return rows_computed_; }
  /// \brief Prompt tokens whose KV came from the prefix cache since construction.
  std::int64_t rows_cached() const { return rows_cached_; }

 private:
  std::vector<float> run(const std::vector<int>& tokens, int start_pos, bool all_rows);

  // Owning decoders only (null when shared); declared first so they outlive the pointers below
  // and are destroyed cache → manager → runner → model.
  std::unique_ptr<DeviceModel> owned_model_;
  std::unique_ptr<ModelRunner> owned_runner_;
  std::unique_ptr<KVCacheManager> owned_manager_;
  std::unique_ptr<PagedKVCache> owned_cache_;

  ModelRunner* runner_;
  KVCacheManager* manager_;
  PagedKVCache* cache_;
  std::string label_;
  Sequence seq_;  // token_ids = the positions with reserved, written KV
  std::int64_t rows_computed_ = 0;
  std::int64_t rows_cached_ = 0;
};

}  // namespace nanoserve::engine
