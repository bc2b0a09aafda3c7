#pragma once
/// \file
/// \brief Turning logits into a token: greedy, temperature, top-k, top-p, min-p, with one
/// counter-based random draw per (request seed, token position) so that the sampled token never
/// depends on batching, preemption or speculation (docs/design.md, "Determinism").
///
/// Pipeline, in this order (the order of Hugging Face's logits warpers):
///
///     logits ─► / temperature ─► softmax ─► top-k ─► top-p ─► min-p ─► renormalize ─► draw
///
/// - **temperature** T > 0 divides the logits; T == 0 means greedy (argmax, ties → lowest id),
///   and then the other filters and the seed are irrelevant.
/// - **top-k** (k > 0) keeps exactly the k most probable tokens; ties at the boundary are
///   broken by keeping the lower token id (so the kept set always has exactly min(k, V) tokens).
/// - **top-p** (p < 1, Holtzman et al. 2020) ranks the survivors by probability (ties → lower id
///   first) and keeps the shortest prefix whose renormalized mass is ≥ p — at least one token.
/// - **min-p** (m > 0, Nguyen et al. 2024) keeps tokens whose probability is ≥ m · p_max.
/// - **draw**: u = `uniform01(seed, position, RngStream::kSample)`; inverse CDF over the final
///   distribution walking token ids in *ascending id order*: the first id whose cumulative
///   probability exceeds u. (Id order needs no sort, so a device kernel can reproduce it with a
///   prefix sum.)
///
/// Logits may contain -inf (a masked token, probability 0); NaN or +inf is `InvalidArgument`.
/// All probability arithmetic is fp64.

#include <cstdint>
#include <vector>

namespace nanoserve {

/// \brief How one request turns logits into tokens.
struct SamplingParams {
  float temperature = 1.0f;  ///< >= 0; 0 = greedy
  int top_k = 0;             ///< >= 0; 0 = off
  float top_p = 1.0f;        ///< in (0, 1]; 1 = off
  float min_p = 0.0f;        ///< in [0, 1]; 0 = off
  uint64_t seed = 0;         ///< the request's RNG key

  /// \brief True when sampling is greedy argmax (`temperature == 0`).
  bool greedy() const { return temperature == 0.0f; }
  /// \brief Throws `InvalidArgument` naming the field and value if any field is out of range.
  void validate() const;
};

/// \brief Index of the largest logit, the lowest id among ties. Throws `InvalidArgument` if
/// `vocab <= 0` or a logit is NaN.
/// \param logits (vocab)
/// \param vocab  number of logits
int argmax(const float* logits, int vocab);

/// \brief The distribution `sample` draws from: (vocab) probabilities after temperature,
/// top-k, top-p and min-p, renormalized to sum to 1, exactly 0 for removed tokens (one-hot at
/// the argmax when greedy). Speculative decoding compares the target's and draft's vectors
/// from this same function.
/// \param logits (vocab)
/// \param vocab  number of logits
/// \param params validated; `seed` is unused here
std::vector<double> probabilities(const float* logits, int vocab, const SamplingParams& params);

/// \brief Inverse-CDF draw in ascending id order: the smallest id `i` with
/// `u * Σw < w[0] + … + w[i]`. `weights` need not be normalized but must be finite, >= 0 and
/// not all zero; `u` must be in [0, 1). Used by `sample` and by speculative decoding's
/// residual resampling.
/// \param weights (vocab)
/// \param u       the uniform draw in [0, 1)
int sample_from(const std::vector<double>& weights, double u);

/// \brief The token for one request at one position:
/// `sample_from(probabilities(logits, vocab, params), uniform01(params.seed, position,
/// RngStream::kSample))` — one uniform draw, a pure function of its arguments.
/// \param logits   (vocab)
/// \param vocab    number of logits
/// \param params   validated; `seed` keys the draw
/// \param position the position of the token being sampled in its sequence
int sample(const float* logits, int vocab, const SamplingParams& params, uint64_t position);

/// \brief The model's log-probability of `token`: log-softmax of the raw logits (temperature 1,
/// no filters), in fp64 — what an OpenAI-style `logprobs` field reports and what the device
/// sampler returns (kernels/sampling.h, `launch_sample`). Throws `InvalidArgument` for the
/// logits `sample` refuses or a token outside [0, vocab).
/// \param logits (vocab)
/// \param vocab  number of logits
/// \param token  the token whose log-probability is wanted
double token_logprob(const float* logits, int vocab, int token);

}  // namespace nanoserve
