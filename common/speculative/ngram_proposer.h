#pragma once
/// \file
/// \brief `NgramProposer`: prompt-lookup drafting with no model at all (Saxena 2023, "Prompt
/// Lookup Decoding"; vLLM's `ngram` speculator). If the last n tokens appeared earlier in the
/// sequence, guess that what followed them then follows them now:
///
///     context: ... the little dog ran to the | park . The little dog ran | ?
///                      └─── n = 3 ───┘ └ proposal ┘           └─ last n = 3 ─┘
///     proposal: "to the park" (up to γ tokens after the most recent earlier match)
///
/// It pays off on text that repeats its context — summaries, code edits, quoted documents,
/// stories that reuse names and phrases — and costs a scan of the context per round.
///
/// Its guesses are deterministic, so `Proposal::q` stays empty: the verifier treats each q_i
/// as one-hot(x_i), which keeps sampled output exactly distributed as the target's (rejection.h).

#include <string>
#include <vector>

#include "common/speculative/proposer.h"

namespace nanoserve::speculative {

/// \brief The tokens after the most recent earlier occurrence of the context's last n tokens,
/// for the largest n in `max_ngram .. min_ngram` that matches; at most `gamma` of them, and
/// empty when nothing matches. An occurrence must start before the suffix itself, but its
/// continuation may run into the suffix (so "a b a b a b" continues the repetition).
/// Throws `InvalidArgument` unless `1 <= min_ngram <= max_ngram`.
/// \param context   (L) the accepted tokens
/// \param gamma     most tokens to return
/// \param max_ngram longest suffix tried first
/// \param min_ngram shortest suffix tried last
std::vector<int> prompt_lookup(const std::vector<int>& context, int gamma, int max_ngram,
                               int min_ngram);

/// \brief A `Proposer` over `prompt_lookup`.
class NgramProposer final : public Proposer {
 public:
  /// \brief Tries suffixes of `max_ngram` down to `min_ngram` tokens. Throws `InvalidArgument`
  /// unless `1 <= min_ngram <= max_ngram`.
  explicit NgramProposer(int max_ngram = 3, int min_ngram = 1);
  /// \brief Nothing to forget: the proposal is a function of the context.
  void reset() override {}
  /// \brief `prompt_lookup(context, gamma, …)` with empty q (point masses); `params` unused.
  Proposal propose(const std::vector<int>& context, int gamma,
                   const SamplingParams& params) override;
  /// \brief 0: proposes ids that are already in the context, whatever the vocabulary.
  int vocab_size() const override { return 0; }
  /// \brief "ngram(max..min)".
  std::string name() const override;

 private:
  int max_ngram_;
  int min_ngram_;
};

}  // namespace nanoserve::speculative
