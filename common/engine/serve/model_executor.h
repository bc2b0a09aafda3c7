#pragma once
/// \file
/// \brief `ModelExecutor`: the real model behind the `Executor` seam (chapters 3 and 4) — a
/// `SchedulerOutput` becomes one `ForwardBatch` over paged KV, one forward pass through the
/// kernels, and one sampled token per sampling sequence. The scheduler's output is all it
/// reads: block tables, slots and copies travel in it (it never sees the `KVCacheManager`),
/// and its device pools have the scheduler's block count and size from the start.
///
///     SchedulerOutput                         ForwardBatch (one pass)
///     ───────────────                         ───────────────────────
///     block_copies                       ──►  block_copies (done before any row is written)
///     seq 4: pos 32..37 (prefill chunk)  ──►  chunk {seq 4, start 32, 6 rows, its blocks}
///     seq 2: pos 41     (decode)         ──►  chunk {seq 2, start 41, 1 row}    logit row 6
///     seq 7: pos 9      (decode)         ──►  chunk {seq 7, start 9,  1 row}    logit row 7
///     slot_mapping                       ──►  slot_mapping (each row's K/V destination)
///     num_wasted_rows (static batching)  ──►  padding rows of the same pass (see below)
///                                             │ ModelRunner::forward: every layer writes
///                                             │ its rows' K/V, then attends (the contract)
///                                             ▼
///     tokens: sample(logits row of seq 2, seq 2's params, position 42),
///             sample(logits row of seq 7, seq 7's params, position 10)
///
/// The sampling runs on the device (`DeviceSampler`, the host sampler's decisions): the logits
/// never leave it, only the token ids do. `device_sampling = false` downloads the logits and
/// samples on the host instead (the same tokens; kernels/sampling.h says when fp64 rounding
/// could differ).
///
/// A step on the device: everything it sends (token ids, positions, slots, block tables,
/// lengths, copy-on-write pairs, sampling parameters) goes in one upload from pinned memory;
/// a decode step replays its bucket's CUDA graph (`cuda_graphs`), others launch kernel by
/// kernel; the only wait is for the sampled token ids (`counters()` counts all of it).
///
/// Determinism: each token is drawn with the request's own SamplingParams and the RNG keyed by
/// (seed, position of the sampled token), as `generate()` does for a request running alone,
/// so the draw never depends on the batch. (The logits themselves may differ from a solo
/// run's in the last bits — a different number of rows picks GEMV or GEMM, decode or varlen
/// attention — which can only matter at an exact near-tie; the chapter tests check this.)
///
/// An output larger than the runner's buffers (a static batch's whole padded prefill) is cut
/// into several passes at row boundaries; a sequence cut in two writes its first part's KV in
/// the earlier pass, so causality holds. Size the runner to the scheduler's budgets
/// (`executor_options_for`) and every continuous-batching step is exactly one pass.
///
/// Static batching's waste (padding to the longest prompt, finished members' idle rows) is
/// paid the way a padded batch on a GPU pays it: as extra rows *of the same pass* — one more
/// chunk, of a padding sequence whose blocks lie past the scheduler's in a private part of the
/// pool — so the weights are read once per pass, not once more for the padding.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/engine/model/device_model.h"
#include "common/engine/serve/executor.h"
#include "common/engine/model/device_sampler.h"
#include "common/engine/model/model_runner.h"
#include "common/engine/model/paged_kv_cache.h"

namespace nanoserve::engine {
struct SchedulerConfig;
struct StaticBatchConfig;
}  // namespace nanoserve::engine

namespace nanoserve::engine {

/// \brief Buffer sizes and policies of a `ModelExecutor`.
///
/// \par Example
/// \snippet tests/ch04/test_examples_serve.cpp ModelExecutor
struct ModelExecutorOptions {
  int max_tokens_per_step = 512;  ///< rows of one forward pass (bigger outputs are split)
  int max_logit_rows = 64;        ///< sampled sequences of one forward pass
  int max_seq_len = 0;            ///< most positions per sequence; 0 = the model's context
  int num_kv_blocks = 1024;       ///< blocks of the scheduler's pool (its `num_kv_blocks`)
  int block_size = 16;            ///< positions per block (the scheduler's `block_size`)
  /// \brief Also compute `SchedulerOutput::num_wasted_rows` (static batching's padding and
  /// idle rows) as rows of the same pass, so timings pay for them as a padded batch would.
  /// Off: wasted rows are only counted.
  bool compute_wasted_rows = false;
  std::optional<DType> activation_dtype;  ///< activations; unset = the model's storage type
  std::optional<DType> kv_dtype;          ///< KV cache; unset = the activation type
  /// \brief Sample on the device (`DeviceSampler`: the host sampler's tokens, only token ids
  /// cross to the host); off: the logits are downloaded and sampled on the host.
  bool device_sampling = true;
  /// \brief Replay decode steps from CUDA graphs captured per batch-size bucket (1, 2, 4, 8,
  /// 16, 24, … up to max_logit_rows), padding the batch to its bucket (`RunnerOptions`,
  /// `DecodeGraphs`); prefill and mixed steps launch kernel by kernel. Off: every step does.
  bool cuda_graphs = true;
};

/// \brief Options whose buffers hold one continuous-batching step of `config` in one pass:
/// max_num_batched_tokens rows, max_num_seqs logit rows, max_model_len positions, and the
/// scheduler's pool (num_kv_blocks of block_size).
ModelExecutorOptions executor_options_for(const SchedulerConfig& config);
/// \brief The batch sizes whose decode steps an executor with `options` replays from CUDA
/// graphs (the runner's `graph_buckets`; none without `cuda_graphs`), for a cost model that
/// should model what the executor launches.
std::vector<int> graph_buckets(const ModelExecutorOptions& options);
/// \brief Options for a static batch of `config`: a pass of up to `max_tokens_per_step` rows
/// (the padded prefill is split), batch_size logit rows, max_model_len positions, its pool,
/// wasted rows computed.
ModelExecutorOptions executor_options_for(const StaticBatchConfig& config,
                                          int max_tokens_per_step = 512);

/// \brief The model's forward over the scheduler's paged KV, as an `Executor`.
///
/// \par Example
/// \snippet tests/ch04/test_examples_serve.cpp ModelExecutor
class ModelExecutor final : public Executor {
 public:
  /// \brief A runner for `options` over `model` (which must outlive it) and device KV pools
  /// of `num_kv_blocks` blocks (plus, with `compute_wasted_rows`, the padding sequence's).
  /// Throws `InvalidArgument` for sizes < 1 or a `max_seq_len` beyond the model's context,
  /// `CudaError` when the device is full.
  ModelExecutor(const DeviceModel& model, ModelExecutorOptions options = {});

  /// \brief The forward pass(es) of `output` (its block copies first), then one sampled token
  /// per sampling sequence in `output.seqs` order (see the file comment). Throws the cache's
  /// `InvalidArgument`s for a plan it refuses (a sequence without a block table, a slot outside
  /// the pool or not where its table says).
  std::vector<int> execute(const SchedulerOutput& output) override;
  /// \brief The last `execute`'s log-probabilities (see `Executor::take_logprobs`): the
  /// logit rows of requests that asked are downloaded (device sampling) and log-softmaxed on
  /// the host; empty when no request of the step asked.
  std::vector<TokenLogprobs> take_logprobs() override { return std::move(logprobs_); }

  /// \brief Forward passes run.
  long long num_passes() const { return num_passes_; }
  /// \brief Useful rows computed.
  long long num_rows() const { return num_rows_; }
  /// \brief Wasted rows computed (with `compute_wasted_rows`).
  long long num_wasted_rows() const { return num_wasted_rows_; }
  /// \brief Eager passes, graph captures and replays, padding rows, uploads (the runner's).
  StepCounters counters() const { return runner_.counters(); }
  /// \brief The options it was made with.
  const ModelExecutorOptions& options() const { return options_; }
  /// \brief The device KV pools (the scheduler's blocks first): chapter 9's disaggregated
  /// instances pack a prompt's blocks from them and unpack received blocks into them.
  PagedKVCache& kv_cache() { return *cache_; }
  /// \brief The stream its passes run on.
  cudaStream_t stream() const { return runner_.stream(); }
  /// \brief e.g. "CPU simulator (…) · kernels, fp32 weights, paged KV".
  std::string device_name() const;

 private:
  void run_pass(std::vector<int>& sampled);
  void sample_on_host(const std::vector<float>& logits, int vocab,
                      std::vector<int>& sampled) const;
  /// The log-probabilities of the pass's sampled rows whose requests asked; `host_logits`
  /// is null when the logits are still on the device.
  void record_logprobs(const float* host_logits, const std::vector<int>& sampled);
  void add_padding(int rows, std::vector<int>& sampled);

  const DeviceModel& model_;
  ModelExecutorOptions options_;
  ModelRunner runner_;
  std::unique_ptr<DeviceSampler> sampler_;  // with `device_sampling`
  // The scheduler's blocks [0, num_kv_blocks), then the padding sequence's (if any).
  std::unique_ptr<PagedKVCache> cache_;
  std::vector<int> padding_blocks_;  // the padding sequence's block table (positions 0..)
  // The pass being built: its batch and, per logit row, which entry of `sampled` it fills.
  ForwardBatch batch_;
  std::vector<const ScheduledSequence*> batch_samplers_;
  std::vector<int> batch_sample_index_;
  std::vector<TokenLogprobs> logprobs_;  // of the last execute (empty: none asked)
  long long num_passes_ = 0;
  long long num_rows_ = 0;
  long long num_wasted_rows_ = 0;
};

}  // namespace nanoserve::engine
