#pragma once
/// \file
/// \brief `PagedBackend`: one sequence decoded through the kernels over a paged KV cache
/// (`KVCacheManager` + `PagedKVCache`) — chapter 2's cache behind the same `DecodeBackend`
/// interface chapter 1's `KernelBackend` implements, so `generate()` runs unchanged, plus the
/// rollback speculative decoding needs (chapter 6).
///
///     forward(tokens, 0)   new sequence: manager.allocate — a prefix-cache hit skips the
///                          cached full blocks; only the rest of the prompt is computed
///     forward({x}, p)      manager.append_slot (copy-on-write first if the last block is
///                          shared), then one decode row
///     truncate(n)          manager.rollback: forget rejected draft positions
///     reset()              manager.free: blocks go back to the pool (full ones stay cached,
///                          so the next request with the same prefix hits them)
#include <cstdint>
#include <string>
#include <vector>

#include "common/engine/kv/kv_cache_manager.h"
#include "common/engine/model/model_runner.h"
#include "common/engine/model/paged_kv_cache.h"
#include "common/speculative/rollback_backend.h"

namespace nanoserve::engine {

/// \brief A single-sequence `RollbackBackend` over shared paged KV. Several backends may share
/// one runner, manager and cache (each with its own sequence id); all three must outlive it.
class PagedBackend final : public speculative::RollbackBackend {
 public:
  /// \brief Decodes sequence `seq_id` of `manager` (which must not hold that id yet).
  PagedBackend(ModelRunner& runner, KVCacheManager& manager, PagedKVCache& cache,
               std::int64_t seq_id);
  /// \brief Frees the sequence's blocks.
  ~PagedBackend() override;
  PagedBackend(const PagedBackend&) = delete;
  PagedBackend& operator=(const PagedBackend&) = delete;

  /// \brief Frees the sequence's blocks; the next forward starts a new sequence at 0.
  void reset() override;
  /// \brief Logits (vocab) after `tokens` at `start_pos ..` (`start_pos <= length()`; a smaller
  /// one rolls back first). A new sequence takes its cached prefix from the prefix cache.
  /// Throws `InvalidArgument` for bad positions, `BlockPoolExhausted` (nothing changed) when
  /// the pool is full.
  std::vector<float> forward(const std::vector<int>& tokens, int start_pos) override;
  /// \brief Logits of every row, (T, vocab). Every row is computed, so a new sequence whose
  /// prefix is in the prefix cache is refused (`InvalidArgument`; use `forward`, or a manager
  /// without prefix caching, as speculative decoding does).
  std::vector<float> forward_all(const std::vector<int>& tokens, int start_pos) override;
  /// \brief `manager.rollback` of the positions `length ..`.
  void truncate(int length) override;
  /// \brief Positions whose keys and values are cached.
  int length() const override { return static_cast<int>(seq_.token_ids.size()); }
  /// \brief The model's vocabulary size.
  int vocab_size() const override;
  /// \brief The cache's `max_seq_len`.
  int max_seq_len() const override { return cache_.max_seq_len(); }
  /// \brief e.g. "CPU simulator (…) · kernels, fp32 weights, paged KV (block 16)".
  std::string device_name() const override;
  /// \brief The model's name.
  std::string name() const override;
  /// \brief The sequence id in the manager.
  std::int64_t seq_id() const { return seq_.seq_id; }
  /// \brief Token rows pushed through the model since construction.
  std::int64_t rows_computed() const { return rows_computed_; }
  /// \brief Prompt tokens whose KV came from the prefix cache since construction.
  std::int64_t rows_cached() const { return rows_cached_; }

 private:
  std::vector<float> run(const std::vector<int>& tokens, int start_pos, bool all_rows);

  ModelRunner& runner_;
  KVCacheManager& manager_;
  PagedKVCache& cache_;
  Sequence seq_;  // token_ids = the positions with reserved, written KV
  std::int64_t rows_computed_ = 0;
  std::int64_t rows_cached_ = 0;
};

}  // namespace nanoserve::engine
