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
///       q, k, v = xn Wqᵀ, xn Wkᵀ, xn Wvᵀ                       (T, q_dim), (T, kv_dim) ×2
///       rope(q, k, positions)
///       attention.append_kv(k, v)                             KV cache ← rows
///       a = attention.attend(q)                               (T, q_dim)
///       x += a Woᵀ                                            fused: linear kAccumulate
///       xn = rmsnorm(x, ffn_norm)
///       h = swiglu(xn W1ᵀ, xn W3ᵀ)                            (T, hidden_dim)
///       x += h W2ᵀ                                            fused: linear kAccumulate
///     for the wanted rows only: logits = rmsnorm(x, final_norm) Wclsᵀ    (rows, vocab)
///
/// The same meaning as `oracle::forward_prompt`, step for step. Where keys and values live and
/// which attention kernel reads them is the `DeviceKVCache`'s business.

#include <cstdint>
#include <vector>

#include "common/engine/model/device_kv_cache.h"
#include "common/engine/model/device_model.h"
#include "common/engine/model/forward_batch.h"

namespace nanoserve::engine {

/// \brief Sizes of a runner's preallocated buffers.
///
/// \par Example
/// \snippet tests/ch01/test_examples_model.cpp ModelRunner
struct RunnerOptions {
  int max_tokens_per_step = 512;  ///< most rows (tokens) of one `ForwardBatch`
  int max_logit_rows = 1;         ///< most rows of logits one pass returns
};

/// \brief Runs forward passes of one `DeviceModel` (which must outlive it) on one stream.
///
/// \par Example
/// \snippet tests/ch01/test_examples_model.cpp ModelRunner
class ModelRunner {
 public:
  /// \brief Allocates the activations for `options`. Throws `InvalidArgument` for sizes < 1.
  ModelRunner(const DeviceModel& model, RunnerOptions options = {}, cudaStream_t stream = 0);

  /// \brief Runs `batch` with keys and values through `attention`; returns the logits of
  /// `batch.logit_rows`, (rows, vocab) row-major, copied to the host (which synchronizes).
  /// Throws `InvalidArgument` — before any kernel runs — for a batch that fails
  /// `ForwardBatch::validate`, has more rows than `max_tokens_per_step` or more logit rows than
  /// `max_logit_rows`, or that `attention` refuses; and for a cache whose layout does not fit
  /// the model.
  std::vector<float> forward(const ForwardBatch& batch, DeviceKVCache& attention);

  /// \brief The device logits of the last pass, (logit rows, vocab) fp32 (for device sampling).
  const float* device_logits() const { return logits_.get(); }
  /// \brief The model it runs.
  const DeviceModel& model() const { return model_; }
  /// \brief The buffer sizes it was made with.
  const RunnerOptions& options() const { return options_; }
  /// \brief Device bytes of the preallocated activations and logits.
  std::int64_t activation_bytes() const;

 private:
  void check_layout(const DeviceKVCache& attention) const;
  void final_logits(const ForwardBatch& batch);

  const DeviceModel& model_;
  RunnerOptions options_;
  cudaStream_t stream_;
  // Activations, sized for max_tokens_per_step = Tmax rows (llama2.c's RunState):
  DeviceBuffer<int> tokens_;     // (Tmax)
  DeviceBuffer<int> positions_;  // (Tmax)
  DeviceBuffer<float> x_;        // (Tmax, dim) residual stream
  DeviceBuffer<float> xn_;       // (Tmax, dim) normalized residual
  DeviceBuffer<float> q_;        // (Tmax, q_dim) queries
  DeviceBuffer<float> k_;        // (Tmax, kv_dim) keys of the new rows
  DeviceBuffer<float> v_;        // (Tmax, kv_dim) values of the new rows
  DeviceBuffer<float> att_;      // (Tmax, q_dim) attention output
  DeviceBuffer<float> gate_;     // (Tmax, hidden_dim) W1 x, then swiglu
  DeviceBuffer<float> up_;       // (Tmax, hidden_dim) W3 x
  DeviceBuffer<float> logits_;   // (max_logit_rows, vocab)
  std::vector<int> host_positions_;  // source of the positions upload, kept alive
  std::vector<float> inv_freq_;      // (head_dim / 2) RoPE frequencies, rope_scaling applied
};

}  // namespace nanoserve::engine
