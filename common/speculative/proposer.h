#pragma once
/// \file
/// \brief The `Proposer` interface of speculative decoding: something cheap that guesses the
/// next γ tokens of a sequence, for the target model to verify in one forward pass
/// (Leviathan et al. 2023, "Fast Inference from Transformers via Speculative Decoding";
/// Chen et al. 2023, "Accelerating Large Language Model Decoding with Speculative Sampling").
///
/// Two kinds ship with the chapter: a draft model (`DraftModelProposer`) and prompt lookup
/// (`NgramProposer`). Verification needs, for every proposed token x_i, the distribution q_i
/// it was drawn from; a proposer whose guesses are deterministic leaves `q` empty, which the
/// verifier reads as q_i = one-hot(x_i) (see rejection.h for why that is still exact).

#include <cstdint>
#include <string>
#include <vector>

#include "common/sampling/sampler.h"

namespace nanoserve::speculative {

/// \brief Up to γ guessed tokens for positions L .. L+k-1 of a sequence of L accepted tokens.
struct Proposal {
  std::vector<int> tokens;              ///< (k) draft tokens x_1 .. x_k, k <= γ (may be 0)
  /// \brief (k, vocab) the q_i each x_i was drawn from; empty = point masses (one-hot q_i).
  std::vector<std::vector<double>> q;
};

/// \brief A source of draft tokens for one sequence at a time.
class Proposer {
 public:
  virtual ~Proposer() = default;
  /// \brief Forgets the current sequence.
  virtual void reset() = 0;
  /// \brief Starts a request with `prompt`: `reset()`, and a proposer with a model prefills the
  /// prompt here, so that its cost is a prefill cost and not a per-token one. Calling
  /// `propose` without it still works (the first call then does the prefill).
  virtual void begin(const std::vector<int>& prompt) {
    (void)prompt;
    reset();
  }
  /// \brief Guesses up to `gamma` tokens that follow `context` (every accepted token so far:
  /// prompt and generated ones, in order). Drafts and q are computed with `params` — the same
  /// temperature/top-k/top-p/min-p as the target, so that p and q are comparable — and any
  /// random draw uses `uniform01(params.seed, position, RngStream::kDraftSample)`.
  /// `context` may have lost a tail of earlier proposals (rejected tokens); a proposer with a
  /// cache rolls it back itself.
  virtual Proposal propose(const std::vector<int>& context, int gamma,
                           const SamplingParams& params) = 0;
  /// \brief The vocabulary its tokens and q rows index (0 = not tied to one, e.g. n-grams).
  virtual int vocab_size() const = 0;
  /// \brief A short label for reports ("draft:stories260K-l2", "ngram(3..1)").
  virtual std::string name() const = 0;
  /// \brief Model forward passes run by `propose` since construction (0 for a proposer
  /// without a model; prefills in `begin` are not counted).
  virtual int64_t forwards() const { return 0; }
};

}  // namespace nanoserve::speculative
