#pragma once
/// \file
/// \brief `ModelRunner`: the Llama forward pass on the device, built from the kernel layer —
/// llama2.c's `forward()`, one launch per step, for any `ForwardBatch`.
///
/// For the T rows of a batch (shapes per pass; every buffer is preallocated for
/// `max_tokens_per_step` rows when the runner is made, never per call):
///
///     x = embedding[tokens]                                   (T, dim)
///     for each layer:
///       xn = rmsnorm(x, attn_norm)                            (T, dim)
///       qkv = xn Wqkvᵀ                                        (T, q_dim + 2 kv_dim): q | k | v
///       q, KV cache ← rope(q), rope(k), v  (+ biases)         fused: RoPE v02 with the append
///       a = attention.attend(q)                               (T, q_dim)
///       x += a Woᵀ                                            fused: linear kAccumulate
///       xn = rmsnorm(x, ffn_norm)
///       h = silu(xn W1ᵀ) ⊙ xn W3ᵀ                             (T, hidden_dim) fused: one
///                                                             linear over W13 = [W1; W3], kSwiGLU
///       x += h W2ᵀ                                            fused: linear kAccumulate
///     for the wanted rows only: logits = rmsnorm(x, final_norm) Wclsᵀ    (rows, vocab)
///
/// The same meaning as `oracle::forward_prompt`, step for step; in fp32 the fused kernels give
/// bitwise the values of the separate ones (kernels/README.md, "Fusions"). A layer whose
/// linears could not be stacked (`DeviceLayer`) runs wq, wk, wv and w1, w3, swiglu one by one.
/// Where keys and values live and which attention kernel reads them is the `DeviceKVCache`'s
/// business.
///
/// A step on the device, in order (only the first and the last wait for anything):
///
///     stage      the cache's metadata, token ids, positions (and, through `stage_more`, the
///                sampler's parameters) into one pinned buffer (`StepStaging`)
///     upload     one cudaMemcpyAsync of all of it
///     before     the cache's block copies, enqueued behind the upload
///     pass       a decode pass of up to the largest bucket's rows with `cuda_graphs`: the
///                bucket's CUDA graph, padded (`DecodeGraphs`); otherwise the launches one by one
///     (sample)   the caller's: only the token ids come back, the step's one synchronization
///
/// Every activation buffer (x … h) is stored in the runner's activation type (fp32, fp16 or
/// bf16; `RunnerOptions::activation_dtype`); each kernel widens what it loads to fp32, computes in
/// fp32 (norm sums, RoPE, softmax, every accumulation) and rounds once on store. The residual
/// adds fused into wo and w2 load x, add in fp32 and round the sum once. Only the logits are
/// always fp32 (the classifier reads xn in the activation type and writes fp32).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "common/engine/model/decode_graphs.h"
#include "common/engine/model/device_kv_cache.h"
#include "common/engine/model/device_model.h"
#include "common/engine/model/forward_batch.h"
#include "common/engine/model/step_counters.h"
#include "common/engine/model/step_staging.h"

namespace nanoserve::engine {

class TensorParallelGroup;

/// \brief Sizes of a runner's preallocated buffers, and its activation type.
///
/// \par Example
/// \snippet tests/ch01/test_examples_model.cpp ModelRunner
struct RunnerOptions {
  /// \brief The defaults below.
  RunnerOptions() = default;
  /// \brief `{max_tokens_per_step, max_logit_rows}` or with an activation type as well.
  RunnerOptions(int max_tokens, int max_logits, std::optional<DType> activations = std::nullopt)
      : max_tokens_per_step(max_tokens),
        max_logit_rows(max_logits),
        activation_dtype(activations) {}

  int max_tokens_per_step = 512;  ///< most rows (tokens) of one `ForwardBatch`
  int max_logit_rows = 1;         ///< most rows of logits one pass returns
  /// Storage type of the activations between kernels; unset = the model's weight type
  /// (`DeviceModel::dtype()`). fp32 reproduces the reference implementations exactly.
  std::optional<DType> activation_dtype;
  /// Replay decode passes (one row per chunk, every row sampled, at most
  /// min(max_tokens_per_step, max_logit_rows) rows) from CUDA graphs captured per batch-size
  /// bucket (`DecodeGraphs`); other passes launch kernel by kernel. Off by default here, so
  /// that chapters 1 and 2 show the launches; the serving engine (`ModelExecutorOptions`) and
  /// the programs turn it on (`--no-cuda-graphs` to compare).
  bool cuda_graphs = false;
  /// Tensor parallelism (chapter 9): the group this rank belongs to, whose shard the runner's
  /// model is (`shard_model`); it must outlive the runner. The runner then adds the group's
  /// collectives to every pass, returns the whole model's logits, and on rank 0 broadcasts
  /// each pass's plan (`TensorParallelGroup`). Null: one device, no collectives. With a group,
  /// passes are never replayed from graphs (`cuda_graphs` is ignored).
  TensorParallelGroup* tensor_parallel = nullptr;
};

/// \brief The batch sizes whose decode passes a runner with `options` replays from graphs:
/// `cuda_graph_buckets(min(max_tokens_per_step, max_logit_rows))`; none without `cuda_graphs`.
std::vector<int> graph_buckets(const RunnerOptions& options);



/// \brief Runs forward passes of one `DeviceModel` (which must outlive it) on one stream.
///
/// \par Example
/// \snippet tests/ch01/test_examples_model.cpp ModelRunner
class ModelRunner {
 public:
  /// \brief Allocates the activations for `options`. Runs on `stream`, or on a stream of its
  /// own (created with cudaStreamCreate: ordered with the legacy default stream) when given 0 —
  /// a graph cannot be captured on the legacy stream. Throws `InvalidArgument` for sizes < 1.
  ModelRunner(const DeviceModel& model, RunnerOptions options = {}, cudaStream_t stream = 0);

  /// \brief Runs `batch` with keys and values through `attention`; returns the logits of
  /// `batch.logit_rows`, (rows, vocab_size()) row-major, copied to the host (which
  /// synchronizes). Throws `InvalidArgument` — before any kernel runs — for a batch that fails
  /// `ForwardBatch::validate`, has more rows than `max_tokens_per_step` or more logit rows than
  /// `max_logit_rows`, or that `attention` refuses; and for a cache whose layout does not fit
  /// the model. Under tensor parallelism every rank runs the same batch (rank 0 broadcasts it
  /// once it is accepted; `follow_plans` runs it on the others), and a peer that fails makes
  /// it throw `dist::CommError`.
  std::vector<float> forward(const ForwardBatch& batch, DeviceKVCache& attention);
  /// \brief `forward` without the download: the logits stay in `device_logits()` for a device
  /// sampler, and nothing synchronizes (the pass is queued on `stream()`). `stage_more`, when
  /// given, adds what else the step sends (the sampler's parameters) to the same upload; it
  /// runs after the cache accepted the batch and before anything is uploaded or launched (if
  /// it throws, a `NaiveKVCache` keeps the batch's new lengths; a `PagedKVCache` keeps
  /// nothing). Same errors.
  void forward_on_device(const ForwardBatch& batch, DeviceKVCache& attention,
                         const std::function<void(StepStaging&)>& stage_more = {});

  /// \brief The device logits of the last pass, (logit rows, vocab_size()) fp32 (for device
  /// sampling).
  const float* device_logits() const { return logits_.get(); }
  /// \brief Width of the logits: the model's vocabulary, or under tensor parallelism the whole
  /// model's (the shard holds a slice).
  int vocab_size() const;
  /// \brief The storage type of the activations (options' activation_dtype, or the model's).
  DType activation_dtype() const { return act_; }
  /// \brief The model it runs.
  const DeviceModel& model() const { return model_; }
  /// \brief The buffer sizes it was made with.
  const RunnerOptions& options() const { return options_; }
  /// \brief Device bytes of the preallocated activations and logits.
  std::int64_t activation_bytes() const;
  /// \brief The stream every pass runs on.
  cudaStream_t stream() const { return stream_; }
  /// \brief Rows of the graph a decode pass of `rows` rows would replay (0: launched eagerly).
  int graph_rows(const ForwardBatch& batch) const;
  /// \brief The graph buckets (empty without `cuda_graphs`).
  const std::vector<int>& graph_buckets() const { return graphs_.buckets(); }
  /// \brief Passes, graph captures and replays, padding rows and uploads so far.
  StepCounters counters() const;

 private:
  void check_layout(const DeviceKVCache& attention) const;
  // The kernels of one pass over `T` rows, `logit_rows` of them getting logits.
  void launch_pass(int T, const std::vector<int>& logit_rows, DeviceKVCache& attention);
  template <typename A, typename W>
  void run_layers(int T, DeviceKVCache& attention);
  template <typename A, typename W>
  void final_logits(const std::vector<int>& rows);
  // Tensor parallelism: sums x over the ranks after a row-parallel step (no-op without).
  template <typename A>
  void all_reduce_residual(A* x, int T);
  template <typename A>
  A* as(DeviceBuffer<std::byte>& b) {
    return reinterpret_cast<A*>(b.get());
  }

  struct StreamDeleter {
    void operator()(CUstream_st* s) const { cudaStreamDestroy(s); }
  };

  const DeviceModel& model_;
  RunnerOptions options_;
  std::unique_ptr<CUstream_st, StreamDeleter> own_stream_;  // when constructed with stream 0
  cudaStream_t stream_;
  DType act_;  // storage type of every activation buffer below
  StepStaging staging_;  // the step's inputs: (rows) token ids | (rows) positions | the cache's …
  std::size_t tokens_at_ = 0;     // staged offsets of this pass's token ids
  std::size_t positions_at_ = 0;  // and positions
  DecodeGraphs graphs_;           // one graph per bucket, with cuda_graphs
  StepCounters counters_;         // passes, eager passes, padding rows (graphs_ count the rest)
  // Activations, sized for max_tokens_per_step = Tmax rows (llama2.c's RunState), in act_
  // (bytes: elements × dtype_bytes(act_)):
  DeviceBuffer<std::byte> x_;         // (Tmax, dim) residual stream
  DeviceBuffer<std::byte> xn_;        // (Tmax, dim) normalized residual
  DeviceBuffer<std::byte> qkv_;       // (Tmax, q_dim + 2 kv_dim) the QKV projection's rows
  DeviceBuffer<std::byte> q_;         // (Tmax, q_dim) queries, RoPE applied
  DeviceBuffer<std::byte> att_;       // (Tmax, q_dim) attention output
  DeviceBuffer<std::byte> h_;         // (Tmax, hidden_dim) silu(W1 x) ⊙ W3 x
  DeviceBuffer<std::byte> up_;        // (Tmax, hidden_dim) W3 x: only for unstacked w1, w3
  DeviceBuffer<float> logits_;        // (max_logit_rows, vocab_size()) always fp32
  // Tensor parallelism only: this rank's logits (max_logit_rows, shard vocab + 1) and the
  // all-gather's scratch (size × max_logit_rows × gather_width).
  DeviceBuffer<float> shard_logits_;
  DeviceBuffer<float> gathered_logits_;
  std::vector<float> inv_freq_;      // (head_dim / 2) RoPE frequencies, rope_scaling applied
};

}  // namespace nanoserve::engine
