#pragma once
/// \file
/// \brief Sampling on the device, with the meaning of the host sampler
/// (common/sampling/sampler.h) so that the two pick the same tokens.
///
/// **The sampler** (`launch_sample`, kernels/sample.cu): the host's whole pipeline in one launch,
/// one block per row, every row with its own temperature, top-k, top-p, min-p, seed and position:
///
///     logits ─► / temperature ─► softmax ─► top-k ─► top-p ─► min-p ─► renormalize ─► draw
///
/// in the host's order, with its tie rules (ranking by probability, then lower id; greedy = the
/// first maximum) and fp64 arithmetic; the uniform is drawn *on the device* by the host's own
/// Philox code (kernels/philox.h, `uniform01(seed, position, RngStream::kSample)`), so only token
/// ids (and, when asked, fp32 log-probabilities) come back to the host. Every feature of the host
/// sampler is here; there is no host fallback.
///
/// Where the two can differ, and why it is rare: the device adds fp64 numbers in another order
/// (parallel reductions and scans, deterministic but not the host's left-to-right loops), and on a
/// GPU its fp64 `exp` may differ from the C library's in the last bit. A top-p cut or a draw can
/// therefore differ only when the cumulative mass lands within a few fp64 ulps (~1e-15 relative)
/// of the threshold; the simulator uses the C library's `exp`, and the kernel tests check token
/// equality on thousands of rows, ties included.
///
/// **The steps** (kernels/sampling.cu), the older pieces kept for the tests and bench_kernels:
///
///     logits ─► argmax (greedy, ties → lowest id)
///     logits ─► / temperature ─► softmax ─► probabilities ─► inverse-CDF draw in id order
///
/// in fp32 and without the filters.
///
/// The engine calls it through `engine::DeviceSampler` (common/engine/model/device_sampler.h),
/// whose per-row parameters ride in the step's one upload.

#include <cstdint>

#include "kernels/cuda_compat.h"

namespace nanoserve {

/// \brief One row's sampling parameters as the device reads them: the host `SamplingParams`
/// plus the position whose token is drawn (the counter of the draw).
struct SampleRowParams {
  float temperature;      ///< >= 0; 0 = greedy (the filters and the seed are then ignored)
  int top_k;              ///< >= 0; 0 = off
  float top_p;            ///< in (0, 1]; 1 = off
  float min_p;            ///< in [0, 1]; 0 = off
  std::uint64_t seed;     ///< the request's RNG key
  std::uint64_t position; ///< position of the token being sampled in its sequence
};

/// \brief The host `sample(logits[r], vocab, params[r], params[r].position)` for every row, on
/// `stream`: greedy, temperature, top-k, top-p and min-p with the host's order, tie rules and
/// Philox draw (see the file comment for the only, rounding-level, way they can differ).
///
/// A row the host would refuse — parameters outside `SamplingParams::validate`'s ranges, a NaN
/// or +inf logit, or every logit -inf — gets token -1 (and a NaN logprob); the caller turns -1
/// into the host's error (engine::DeviceSampler does). -inf logits are masked tokens.
/// \param logits   (rows, vocab) fp32
/// \param params   (rows) device memory
/// \param rows     number of rows (0 launches nothing)
/// \param vocab    logits per row (>= 1)
/// \param tokens   (rows) device ints: the sampled ids
/// \param logprobs (rows) device floats, or nullptr: the log-softmax of the raw logits
///                 (temperature 1, no filters; the model's log-probability, as an OpenAI-style
///                 `logprobs` field reports it) at the sampled token, computed in fp64, stored
///                 in fp32 — the host's `token_logprob`
/// \param stream   CUDA stream
/// \throws std::invalid_argument for negative rows or vocab < 1
void launch_sample(const float* logits, const SampleRowParams* params, int rows, int vocab,
                   int* tokens, float* logprobs, cudaStream_t stream);

/// \brief `tokens[r] = argmax(logits[r])`, the lowest id among equal maxima (as the host
/// `argmax`), on `stream`. A row containing NaN has no argmax: its token is -1 (the host
/// version throws; the caller turns -1 into that error).
/// \param logits (rows, vocab) fp32
/// \param rows   number of rows (0 launches nothing)
/// \param vocab  logits per row (>= 1)
/// \param tokens (rows) device ints
/// \param stream CUDA stream
/// \throws std::invalid_argument for negative rows or vocab < 1
void launch_argmax(const float* logits, int rows, int vocab, int* tokens, cudaStream_t stream);

/// \brief The distribution the host `probabilities()` returns without top-k/top-p/min-p:
/// `probs[r][i] = exp((logits[r][i] - max) / t_r) / Σ_k exp((logits[r][k] - max) / t_r)`, or a
/// one-hot row at the argmax when `t_r == 0` (greedy), on `stream`. `-inf` logits get 0.
///
/// Computed in fp32 (the host in fp64). A temperature that is negative or NaN (the host's
/// `SamplingParams::validate` rejects both), or a NaN logit, gives a row of NaN.
/// \param logits       (rows, vocab) fp32
/// \param temperatures (rows) fp32, device memory
/// \param rows         number of rows (0 launches nothing)
/// \param vocab        logits per row (>= 1)
/// \param probs        (rows, vocab) fp32; may alias `logits`
/// \param stream       CUDA stream
/// \throws std::invalid_argument for negative rows or vocab < 1
void launch_sampling_probs(const float* logits, const float* temperatures, int rows, int vocab,
                           float* probs, cudaStream_t stream);

/// \brief Inverse-CDF draw in ascending id order, the host `sample_from`: `tokens[r]` is the
/// smallest id i with `u[r] * Σw < w[0] + … + w[i]`, on `stream`. Weights need not be
/// normalised.
///
/// The prefix sums are fp32 (the host's fp64): a draw that falls within ~1e-6 of a boundary
/// between two tokens may pick the neighbour. If rounding leaves no id (u * Σw ≥ the last
/// prefix sum), the largest id with a positive weight is taken; a row of only zeros, or with a
/// negative or NaN weight, or a u outside [0, 1), gives -1.
/// \param weights (rows, vocab) fp32, finite and >= 0
/// \param u       (rows) uniform draws in [0, 1), device memory
/// \param rows    number of rows (0 launches nothing)
/// \param vocab   weights per row (>= 1)
/// \param tokens  (rows) device ints
/// \param stream  CUDA stream
/// \throws std::invalid_argument for negative rows or vocab < 1
void launch_sample_from(const float* weights, const float* u, int rows, int vocab, int* tokens,
                        cudaStream_t stream);

}  // namespace nanoserve
