#pragma once
/// \file
/// \brief `DeviceSampler`: the host sampler's decisions made on the device, so that a step sends
/// only token ids (and logprobs when asked) back to the host instead of (rows, vocab) logits.
///
///     per step:  SamplingParams + positions ─► pinned staging ─► upload (rows × 32 bytes)
///                device logits (rows, vocab) ─► launch_sample ─► tokens (+ logprobs)
///                                                         └► one download (rows × 4 or 8 bytes)
///
/// In the engine's step the parameters ride in the step's one upload (`stage` into the
/// runner's `StepStaging`, then `sample_staged` after the pass); `sample` alone stages into a
/// staging of its own and uploads it.
///
/// Same tokens as `nanoserve::sample` for the same logits, parameters and positions
/// (kernels/sampling.h says where rounding can part them). Every feature of the host sampler
/// runs on the device; there is no host fallback. Bad parameters and bad logits raise the
/// host's own errors: parameters are checked by `SamplingParams::validate` before the upload,
/// and a row the kernel refuses (token -1) is re-run through the host sampler, whose exception
/// is rethrown.

#include <cstdint>
#include <vector>

#include "common/engine/model/step_staging.h"
#include "common/sampling/sampler.h"
#include "kernels/cuda_compat.h"
#include "kernels/device_buffer.h"
#include "kernels/sampling.h"

namespace nanoserve::engine {

/// \brief Samples up to `max_rows` rows of device logits per call, on one stream.
///
/// \par Example
/// \snippet tests/ch01/test_device_sampler.cpp DeviceSampler
class DeviceSampler {
 public:
  /// \brief Allocates the device buffers and pinned staging for `max_rows` rows of `vocab`
  /// logits. Throws `InvalidArgument` for `max_rows < 1` or `vocab < 1`.
  DeviceSampler(int max_rows, int vocab, cudaStream_t stream = 0);

  /// \brief The token of every row: `tokens[r] == sample(logits[r], vocab, params[r],
  /// positions[r])`. Synchronizes the stream once (the download of the tokens).
  /// \param device_logits (rows, vocab) fp32, device memory (e.g. ModelRunner::device_logits())
  /// \param params        (rows) each request's parameters
  /// \param positions     (rows) position of the token each row samples
  /// \param logprobs      if not null, resized to rows and filled with the log-softmax of the raw
  ///                      logits at the sampled token (the host's `token_logprob`, fp32)
  /// \throws InvalidArgument when params and positions differ in size, rows > max_rows, a
  ///         parameter is out of range (the message of `SamplingParams::validate`), or a row's
  ///         logits are refused (the message of the host sampler)
  std::vector<int> sample(const float* device_logits, const std::vector<SamplingParams>& params,
                          const std::vector<std::uint64_t>& positions,
                          std::vector<float>* logprobs = nullptr);

  /// \brief The first half of `sample` for a step that uploads everything at once: checks the
  /// rows (the errors of `sample`) and stages their parameters in `staging`, which the caller
  /// uploads on this sampler's stream before `sample_staged`.
  void stage(StepStaging& staging, const std::vector<SamplingParams>& params,
             const std::vector<std::uint64_t>& positions);
  /// \brief The second half: the tokens (and logprobs) of the staged rows from `device_logits`
  /// (rows, vocab). Synchronizes the stream once. Throws `InvalidArgument` when nothing was
  /// staged, or with the host sampler's message for a row whose logits are refused.
  std::vector<int> sample_staged(const float* device_logits,
                                 std::vector<float>* logprobs = nullptr);

  /// \brief Most rows per call.
  int max_rows() const { return max_rows_; }
  /// \brief Logits per row.
  int vocab() const { return vocab_; }

 private:
  [[noreturn]] void raise_host_error(const float* device_logits, const SamplingParams& params,
                                     std::uint64_t position, int row) const;

  int max_rows_;
  int vocab_;
  cudaStream_t stream_;
  StepStaging own_staging_;                // what `sample` stages into
  // The staged rows, until sample_staged:
  const StepStaging* staged_in_ = nullptr;  // null: nothing staged
  std::size_t params_at_ = 0;               // offset of the (rows) SampleRowParams section
  std::vector<SamplingParams> params_;      // (rows) for the host's error messages
  std::vector<std::uint64_t> positions_;    // (rows)
  PinnedBuffer<int> host_tokens_;           // (max_rows) pinned: the download
  PinnedBuffer<float> host_logprobs_;       // (max_rows) pinned
  DeviceBuffer<int> tokens_;                // (max_rows)
  DeviceBuffer<float> logprobs_;            // (max_rows)
};

}  // namespace nanoserve::engine
