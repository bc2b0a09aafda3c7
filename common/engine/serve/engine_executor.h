#pragma once
/// \file
/// \brief `EngineExecutor`: the model behind the `Executor` seam for the whole engine of
/// chapter 7 — chapter 4's `ModelExecutor` plus what the stacked techniques need from a step:
/// the verification of draft tokens (speculative decoding), the first tokens of forked samples
/// (parallel sampling) and the block copies of swap preemption. One `SchedulerOutput` is one
/// forward pass: size the executor to the scheduler (`engine_executor_options_for`).
///
///     SchedulerOutput                         one ForwardBatch, chunks reordered:
///     ───────────────                         ┌ plain sampling sequences  → device sampler
///     swap-out, swap-in (host pool),     ──►  │ (their last rows: logit rows 0 .. m-1)
///     block copies
///     seq 4: prefill chunk               ──►  ├ sequences that do not sample (no logits)
///     seq 2: decode              (plain) ──►  └ verifications and forks   → host: their
///     seq 7: last token + 3 drafts       ──►    1 + k logit rows downloaded, the rejection
///                                               rule (speculative::verify_proposal) per
///                                               request, with its own (seed, position) draws
///     tokens, in output order: one per plain sequence; for a verification the accepted
///     drafts, the token after them and -1 padding (scheduler_output.h)
///
/// The verification is chapter 6's rule, unchanged: greedy requests keep drafts while they
/// equal the target's argmax, sampled ones accept x with min(1, p(x)/q(x)) and otherwise
/// resample from (p − q)⁺, p and q both after the request's temperature/top-k/top-p/min-p.
/// A request's tokens therefore depend only on its own tokens, drafts and seed — never on the
/// batch (docs/design.md, "Determinism").

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/engine/model/device_model.h"
#include "common/engine/model/device_sampler.h"
#include "common/engine/model/host_kv_pool.h"
#include "common/engine/model/model_runner.h"
#include "common/engine/model/paged_kv_cache.h"
#include "common/engine/serve/executor.h"

namespace nanoserve::engine {
struct SchedulerConfig;
}  // namespace nanoserve::engine

namespace nanoserve::engine {

/// \brief Buffer sizes of an `EngineExecutor`.
///
/// \par Example
/// \snippet tests/ch07/test_examples_stack.cpp EngineExecutor
struct EngineExecutorOptions {
  int max_tokens_per_step = 512;  ///< rows of one pass: the scheduler's token budget
  /// \brief Logit rows of one pass: a sampling sequence needs 1, a verification 1 + k.
  int max_logit_rows = 64;
  int max_seq_len = 0;       ///< most positions per sequence; 0 = the model's context
  int num_kv_blocks = 1024;  ///< blocks of the scheduler's pool
  int block_size = 16;       ///< positions per block
  int num_host_blocks = 0;   ///< blocks of the pinned host pool swapped-out KV waits in
  std::optional<DType> activation_dtype;  ///< activations; unset = the model's storage type
  std::optional<DType> kv_dtype;          ///< KV cache; unset = the activation type
  /// \brief Sample plain sequences on the device (only token ids cross to the host); off:
  /// on the host. Verifications always run on the host (they need p for every draft row).
  bool device_sampling = true;
};

/// \brief Options for one step of `config` in one pass, with verifications of up to
/// `max_gamma` drafts: max_num_batched_tokens rows, min(rows, max_num_seqs · (1 + max_gamma))
/// logit rows, max_model_len positions, the scheduler's pool.
EngineExecutorOptions engine_executor_options_for(const SchedulerConfig& config,
                                                  int max_gamma = 0);

/// \brief Counters of an `EngineExecutor`.
///
/// \par Example
/// \snippet tests/ch07/test_examples_stack.cpp EngineExecutor
struct EngineExecutorStats {
  long long passes = 0;         ///< forward passes
  long long rows = 0;           ///< rows computed (draft rows included)
  long long draft_rows = 0;     ///< draft rows verified
  long long logit_rows = 0;     ///< rows whose logits were computed
  long long host_logit_rows = 0;  ///< of those, downloaded for verification or forks
  long long blocks_swapped_out = 0;  ///< device blocks copied to the host pool
  long long blocks_swapped_in = 0;   ///< host blocks copied back
};

/// \brief The model's forward over the scheduler's paged KV with everything chapter 7's
/// scheduler plans (see the file comment).
///
/// \par Example
/// \snippet tests/ch07/test_examples_stack.cpp EngineExecutor
class EngineExecutor final : public Executor {
 public:
  /// \brief A runner and device KV pools for `options` over `model` (which must outlive it).
  /// Throws `InvalidArgument` for sizes < 1 or a `max_seq_len` beyond the model's context,
  /// `CudaError` when the device is full.
  EngineExecutor(const DeviceModel& model, EngineExecutorOptions options = {});

  /// \brief The step's block copies, one forward pass, then the sampled entries (see the file
  /// comment). Throws `InvalidArgument` for a step larger than the buffers (rows or logit
  /// rows) or one the cache refuses, and the rejection rule's errors for malformed drafts.
  std::vector<int> execute(const SchedulerOutput& output) override;

  /// \brief The counters.
  const EngineExecutorStats& stats() const { return stats_; }
  /// \brief The options it was made with (max_seq_len resolved).
  const EngineExecutorOptions& options() const { return options_; }
  /// \brief The device KV pools.
  const PagedKVCache& cache() const { return *cache_; }
  /// \brief The host pool (null without one).
  const HostKVPool* host_pool() const { return host_.get(); }
  /// \brief The model it runs.
  const DeviceModel& model() const { return model_; }
  /// \brief e.g. "CPU simulator (…) · kernels, fp32 weights, paged KV".
  std::string device_name() const;

 private:
  const DeviceModel& model_;
  EngineExecutorOptions options_;
  ModelRunner runner_;
  std::unique_ptr<DeviceSampler> sampler_;  // with `device_sampling`
  std::unique_ptr<PagedKVCache> cache_;
  std::unique_ptr<HostKVPool> host_;  // with num_host_blocks
  ForwardBatch batch_;
  std::vector<float> host_logits_;  // (host logit rows, vocab) of the last pass
  EngineExecutorStats stats_;
};

}  // namespace nanoserve::engine
