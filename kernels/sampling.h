#pragma once
/// \file
/// \brief The logits processing a device-side sampler needs, with the meaning of the host
/// `Sampler` (common/sampling/sampler.h) so that the two pick the same tokens:
///
///     logits ─► argmax (greedy, ties → lowest id)
///     logits ─► / temperature ─► softmax ─► probabilities ─► inverse-CDF draw in id order
///
/// Top-k, top-p and min-p are not implemented on the device; a request that uses them goes
/// through the host sampler. Everything here is one block per row, so a batch of requests (one
/// row each, with their own temperatures and uniform draws) is one launch per step.
///
/// Not yet wired into the engine: no program calls these launchers yet (the engine samples on
/// the host); a later issue moves sampling onto the device. The kernel tests keep them equal to
/// the host Sampler meanwhile, and bench_kernels times them.

#include "kernels/cuda_compat.h"

namespace nanoserve {

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
