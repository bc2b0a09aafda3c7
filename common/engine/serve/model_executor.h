#pragma once
/// \file
/// \brief `ModelExecutor`: the real model behind the `Executor` seam — every plan the
/// scheduler makes (chapters 3, 4, 7, 9) becomes forward passes through the kernels over paged
/// KV and the entries `execute` returns. The scheduler's output is all it reads: block tables,
/// slots, copies, swaps, drafts and forks travel in it (it never sees the `KVCacheManager`),
/// and its device pools have the scheduler's block count and size from the start.
///
///     SchedulerOutput                         pass(es): ForwardBatch, chunks grouped
///     ───────────────                         ──────────────────────────────────────
///     blocks_to_swap_out, _in (chapter 7) ──► host pool ⇄ device blocks, before anything
///     block_copies                        ──► with the first pass, before any row is written
///     seq 4: pos 32..37 (prefill chunk)   ──► ┌ plain sampling rows → DeviceSampler
///     seq 2: pos 41     (decode)          ──► │  (logit rows 0 .. m-1, sampled on the device)
///     seq 7: pos 9      (decode)          ──► ├ rows that sample nothing (seq 4: no logits)
///     seq 5: last token + 3 drafts        ──► └ verifications and forks → host: their 1 + k
///     seq 3: last prompt row + 2 forks          logit rows downloaded, chapter 6's rejection
///     num_wasted_rows (static batching)   ──►   rule per request / one draw per sample
///                                             padding rows of the same pass (see below)
///     returned, in output order: one token per plain sequence; for a verification the
///     accepted drafts, the token after them and -1 padding; for forks the request's token
///     then one per sample (scheduler_output.h)
///
/// The sampling of plain rows runs on the device (`DeviceSampler`, the host sampler's
/// decisions, its parameters in the step's one upload): their logits never leave it, only the
/// token ids do. A verification needs p for every draft row, and a forked row is drawn once
/// per sample: their rows are downloaded and decided on the host. `device_sampling = false`
/// downloads every logit row and samples all on the host (the same tokens; kernels/sampling.h
/// says when fp64 rounding could differ).
///
/// The verification is chapter 6's rule, unchanged (`speculative::verify_proposal`): greedy
/// requests keep drafts while they equal the target's argmax, sampled ones accept x with
/// min(1, p(x)/q(x)) and otherwise resample from (p − q)⁺, p and q both after the request's
/// temperature/top-k/top-p/min-p. A forked sample's first token is drawn from its parent's
/// last row with its own seed.
///
/// A step on the device: one upload from pinned memory (token ids, positions, slots, block
/// tables, lengths, copy-on-write pairs, sampling parameters); a pure decode step (one row per
/// sequence, every row sampled) replays its bucket's CUDA graph (`cuda_graphs`), every other
/// pass — prefill, mixed, verification — launches kernel by kernel; the only wait is for the
/// sampled token ids, or for the rows the host decides (`counters()` counts all of it).
///
/// Determinism: each token is drawn with its request's own SamplingParams and the RNG keyed by
/// (seed, position of the token), as `generate()` does for a request running alone, so the
/// draw never depends on the batch. (The logits themselves may differ from a solo run's in the
/// last bits — a different number of rows picks GEMV or GEMM, decode or varlen attention —
/// which can only matter at an exact near-tie; the chapter tests check this.)
///
/// An output larger than the runner's buffers (a static batch's whole padded prefill) is cut
/// into several passes at row boundaries — never inside a sequence's logit rows (a
/// verification's 1 + k stay in one pass); a sequence cut in two writes its first part's KV in
/// the earlier pass, so causality holds. Size the runner to the scheduler's budgets
/// (`executor_options_for`) and every continuous-batching step is exactly one pass.
///
/// Static batching's waste (padding to the longest prompt, finished members' idle rows) is
/// paid the way a padded batch on a GPU pays it: as extra rows *of the same pass* — one more
/// chunk, of a padding sequence whose blocks lie past the scheduler's in a private part of the
/// pool — so the weights are read once per pass, not once more for the padding.
///
/// A plan it cannot carry out is refused before anything runs (`InvalidArgument` naming the
/// request and the field): swaps without a host pool, drafts on a row that does not sample or
/// beyond the request's `draft`, forks of a row that does not sample, a sequence with more
/// logit rows than `max_logit_rows`, a sequence without a block table, negative wasted rows.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/engine/model/device_model.h"
#include "common/engine/model/device_sampler.h"
#include "common/engine/model/host_kv_pool.h"
#include "common/engine/model/model_runner.h"
#include "common/engine/model/paged_kv_cache.h"
#include "common/engine/serve/executor.h"

namespace nanoserve::engine {
struct SchedulerConfig;
struct StaticBatchConfig;
class TensorParallelGroup;
}  // namespace nanoserve::engine

namespace nanoserve::engine {

/// \brief Buffer sizes and policies of a `ModelExecutor`.
///
/// \par Example
/// \snippet tests/ch04/test_examples_serve.cpp ModelExecutor
struct ModelExecutorOptions {
  int max_tokens_per_step = 512;  ///< rows of one forward pass (bigger outputs are split)
  /// \brief Logit rows of one forward pass: a sampling sequence needs 1, a verification of k
  /// drafts 1 + k.
  int max_logit_rows = 64;
  int max_seq_len = 0;            ///< most positions per sequence; 0 = the model's context
  int num_kv_blocks = 1024;       ///< blocks of the scheduler's pool (its `num_kv_blocks`)
  int block_size = 16;            ///< positions per block (the scheduler's `block_size`)
  /// \brief Blocks of the pinned host pool swapped-out KV waits in (the scheduler's
  /// `num_host_blocks`, chapter 7); 0: a plan that swaps is refused.
  int num_host_blocks = 0;
  /// \brief Also compute `SchedulerOutput::num_wasted_rows` (static batching's padding and
  /// idle rows) as rows of the same pass, so timings pay for them as a padded batch would.
  /// Off: wasted rows are only counted.
  bool compute_wasted_rows = false;
  std::optional<DType> activation_dtype;  ///< activations; unset = the model's storage type
  std::optional<DType> kv_dtype;          ///< KV cache; unset = the activation type
  /// \brief Sample plain rows on the device (`DeviceSampler`: the host sampler's tokens, only
  /// token ids cross to the host); off: every logit row is downloaded and sampled on the host.
  /// Verifications and forks are decided on the host either way.
  bool device_sampling = true;
  /// \brief Replay pure decode steps from CUDA graphs captured per batch-size bucket (1, 2, 4,
  /// 8, 16, 24, … up to max_logit_rows), padding the batch to its bucket (`RunnerOptions`,
  /// `DecodeGraphs`); prefill, mixed and verification steps launch kernel by kernel. Off:
  /// every step does.
  bool cuda_graphs = true;
  /// \brief Tensor parallelism (chapter 9): this rank's group, whose shard the model is
  /// (`RunnerOptions::tensor_parallel`; it must outlive the executor). Rank 0 runs the
  /// scheduler and calls `execute`, which broadcasts each pass; every other rank makes an
  /// executor with the same options and calls `follow`. Passes are not replayed from graphs;
  /// a host pool (`num_host_blocks` > 0) is refused: swaps are not broadcast.
  TensorParallelGroup* tensor_parallel = nullptr;
};

/// \brief Options whose buffers hold one continuous-batching step of `config` in one pass,
/// verifying up to `max_gamma` drafts per request: max_num_batched_tokens rows,
/// min(rows, max_num_seqs · (1 + max_gamma)) logit rows, max_model_len positions, the
/// scheduler's pool (num_kv_blocks of block_size) and its host pool (num_host_blocks).
ModelExecutorOptions executor_options_for(const SchedulerConfig& config, int max_gamma = 0);
/// \brief The batch sizes whose decode steps an executor with `options` replays from CUDA
/// graphs (the runner's `graph_buckets`; none without `cuda_graphs`), for a cost model that
/// should model what the executor launches.
std::vector<int> graph_buckets(const ModelExecutorOptions& options);
/// \brief Options for a static batch of `config`: a pass of up to `max_tokens_per_step` rows
/// (the padded prefill is split), batch_size logit rows, max_model_len positions, its pool,
/// wasted rows computed.
ModelExecutorOptions executor_options_for(const StaticBatchConfig& config,
                                          int max_tokens_per_step = 512);

/// \brief What a `ModelExecutor`'s plans asked of it (the passes themselves are counted by
/// `counters()`).
///
/// \par Example
/// \snippet tests/ch07/test_examples_stack.cpp ModelExecutorStats
struct ModelExecutorStats {
  long long rows = 0;             ///< useful rows computed (draft rows included)
  long long wasted_rows = 0;      ///< padding and idle rows computed (`compute_wasted_rows`)
  long long draft_rows = 0;       ///< draft rows verified
  long long logit_rows = 0;       ///< rows whose logits were computed (for sampling)
  long long host_logit_rows = 0;  ///< of those, downloaded to be decided on the host
  long long blocks_swapped_out = 0;  ///< device blocks copied to the host pool
  long long blocks_swapped_in = 0;   ///< host blocks copied back
};

/// \brief The model's forward over the scheduler's paged KV, as an `Executor` (see the file
/// comment).
///
/// \par Example
/// \snippet tests/ch04/test_examples_serve.cpp ModelExecutor
class ModelExecutor final : public Executor {
 public:
  /// \brief A runner for `options` over `model` (which must outlive it), device KV pools of
  /// `num_kv_blocks` blocks (plus, with `compute_wasted_rows`, the padding sequence's) and a
  /// host pool of `num_host_blocks`. Throws `InvalidArgument` for sizes < 1 (< 0 for the host
  /// pool) or a `max_seq_len` beyond the model's context, `CudaError` when memory is full.
  ModelExecutor(const DeviceModel& model, ModelExecutorOptions options = {});

  /// \brief Under tensor parallelism, on a rank > 0: runs the passes rank 0's `execute` sends
  /// until rank 0 stops the group (`TensorParallelGroup::stop`); returns their number.
  /// `wait_forever`: between passes, wait without the watchdog (a server's ranks idle).
  /// Throws `InvalidArgument` without a group or on rank 0.
  long long follow(bool wait_forever = false);

  /// \brief The swaps of `output`, then its forward pass(es) (block copies first), then the
  /// entries of every sampling sequence in `output.seqs` order (see the file comment). Throws
  /// `InvalidArgument` for a plan it cannot carry out (see the file comment) before anything
  /// runs, the cache's for a slot outside the pool or not where its table says, and the
  /// rejection rule's for malformed drafts.
  std::vector<int> execute(const SchedulerOutput& output) override;
  /// \brief The last `execute`'s log-probabilities (see `Executor::take_logprobs`), one per
  /// returned entry: for the requests that asked, each emitted token's (a verification's
  /// accepted drafts and the token after them each from its own row; -1 entries get none);
  /// empty when no request of the step asked.
  std::vector<TokenLogprobs> take_logprobs() override { return std::move(logprobs_); }

  /// \brief What the plans asked so far.
  const ModelExecutorStats& stats() const { return stats_; }
  /// \brief Passes (eager or replayed), graph captures, padding rows, uploads (the runner's).
  StepCounters counters() const { return runner_.counters(); }
  /// \brief The options it was made with (max_seq_len resolved).
  const ModelExecutorOptions& options() const { return options_; }
  /// \brief The model it runs.
  const DeviceModel& model() const { return model_; }
  /// \brief The device KV pools (the scheduler's blocks first): chapter 9's disaggregated
  /// instances pack a prompt's blocks from them and unpack received blocks into them.
  PagedKVCache& kv_cache() { return *cache_; }
  /// \brief The host pool swapped-out blocks wait in (null without one).
  const HostKVPool* host_pool() const { return host_.get(); }
  /// \brief The stream its passes run on.
  cudaStream_t stream() const { return runner_.stream(); }
  /// \brief e.g. "CPU simulator (…) · kernels, fp32 weights, paged KV" (", tensor-parallel 2"
  /// under tensor parallelism).
  std::string device_name() const;

 private:
  /// One sequence's share of the pass being built: `num_tokens` rows of its run from `offset`
  /// on; `num_logit_rows` > 0 when the share ends the run and the run samples. A null `seq`
  /// is the padding sequence (static batching's wasted rows).
  struct Share {
    const ScheduledSequence* seq = nullptr;
    const int* tokens = nullptr;  ///< (num_tokens) its rows' token ids
    int offset = 0;
    int num_tokens = 0;
    int num_logit_rows = 0;
    std::size_t result_at = 0;  ///< its first entry in execute's result
  };
  /// How a share's logit rows are decided.
  enum class Decided { kNothing, kOnDevice, kOnHost };
  Decided decided(const Share& share) const;

  void check_plan(const SchedulerOutput& output) const;
  void swap(const SchedulerOutput& output);
  void add_padding(int rows, std::vector<int>& result);
  // model_executor_pass.cpp: the pass of `shares_` — its batch, its sampling, its logprobs.
  void run_pass(std::vector<int>& result);
  ForwardBatch batch_of(const std::vector<const Share*>& order) const;
  void sample_on_device(const std::vector<const Share*>& shares, std::vector<int>& result);
  void decide_on_host(const std::vector<const Share*>& shares, const float* logits,
                      std::vector<int>& result);
  void record_logprobs(const Share& share, const float* logits, const std::vector<int>& result);

  const DeviceModel& model_;
  ModelExecutorOptions options_;
  ModelRunner runner_;
  std::unique_ptr<DeviceSampler> sampler_;  // with `device_sampling`
  // The scheduler's blocks [0, num_kv_blocks), then the padding sequence's (if any).
  std::unique_ptr<PagedKVCache> cache_;
  std::unique_ptr<HostKVPool> host_;  // with num_host_blocks
  std::vector<int> padding_blocks_;   // the padding sequence's block table (positions 0..)
  // The pass being built: its shares, rows, logit rows, and the copies it performs first.
  std::vector<Share> shares_;
  int pass_rows_ = 0;
  int pass_logit_rows_ = 0;
  std::vector<BlockCopy> pass_copies_;
  std::vector<float> host_logits_;       // (host logit rows, vocab) of the last pass
  std::vector<TokenLogprobs> logprobs_;  // of the last execute (empty: none asked)
  ModelExecutorStats stats_;
};

}  // namespace nanoserve::engine
