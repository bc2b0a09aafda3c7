#pragma once
/// \file
/// \brief Verification: which draft tokens the target keeps, and the token it adds — the
/// rejection-sampling rule of speculative sampling (Leviathan et al. 2023, Algorithm 1, proof in
/// Appendix A.1; Chen et al. 2023, Algorithm 2 and Theorem 1).
///
/// For draft token x ~ q at a position where the target's distribution is p:
///
///     accept x               with probability min(1, p(x) / q(x))        u ~ kSpecAccept
///     otherwise emit y ~ r,  r(y) = max(0, p(y) − q(y)) / Σ_z max(0, p(z) − q(z))
///                                                                        u ~ kSpecResidual
///
/// Why the output is distributed exactly as p: P(emit y) = q(y)·min(1, p(y)/q(y)) +
/// P(reject)·r(y) = min(q(y), p(y)) + (1 − Σ_z min(q(z), p(z)))·r(y), and
/// 1 − Σ min(p, q) = Σ max(0, p − q), so the second term is max(0, p(y) − q(y)); the two add
/// up to p(y). Nothing in this argument needs q to be random: a deterministic guess is q =
/// one-hot(x), accepted with probability p(x), and on rejection r is p with x removed and
/// renormalized — exactly sampling from p (the n-gram proposer relies on this).
///
/// p and q must both be what the sampler would draw from after temperature, top-k, top-p and
/// min-p (`probabilities`): the theorem makes the output equal to *the p you use*, so a p
/// without the filters would silently turn a top-p request into an unfiltered one.
///
/// Greedy requests (temperature 0) accept while the target's argmax equals the draft token,
/// then emit the target's argmax: the output is exactly plain greedy decoding.
///
/// Random draws: the decision for the token at position `pos` uses
/// `uniform01(seed, pos, kSpecAccept)`, its residual `uniform01(seed, pos, kSpecResidual)`, and
/// the bonus token after k accepted drafts the sampler's own `uniform01(seed, pos, kSample)`
/// — functions of (seed, position) only, never of the batch, of γ or of the round.

#include <cstdint>
#include <vector>

#include "common/sampling/sampler.h"
#include "common/speculative/proposer.h"

namespace nanoserve::speculative {

/// \brief The outcome of checking one draft token.
struct TokenVerdict {
  bool accepted = false;  ///< the draft token was kept
  int token = -1;         ///< the draft token if accepted, otherwise the residual sample
};

/// \brief max(0, p − q) element-wise: the residual distribution's unnormalized weights
/// (`sample_from` normalizes). Throws `InvalidArgument` if the sizes differ.
/// \param p (vocab) target distribution
/// \param q (vocab) draft distribution
std::vector<double> residual_weights(const std::vector<double>& p, const std::vector<double>& q);

/// \brief One step of the rule in the file comment: accept `x` when `u_accept · q(x) < p(x)`,
/// else draw from the residual with `u_residual` (`sample_from`, ascending id order). When the
/// residual is all zero — possible only by rounding, when p ≈ q — it draws from p, the
/// residual's limit. Throws `InvalidArgument` if sizes differ, `x` is outside the vocabulary,
/// or q(x) == 0 (x cannot have come from q).
/// \param p          (vocab) target distribution after the sampling filters
/// \param q          (vocab) draft distribution x was drawn from
/// \param x          the draft token
/// \param u_accept   uniform [0, 1) draw for the acceptance test
/// \param u_residual uniform [0, 1) draw for the residual sample
TokenVerdict accept_or_resample(const std::vector<double>& p, const std::vector<double>& q, int x,
                                double u_accept, double u_residual);

/// \brief What one verification kept.
struct VerifyResult {
  int accepted = 0;         ///< leading draft tokens kept, 0 .. k
  std::vector<int> tokens;  ///< the kept drafts followed by one more token: accepted + 1 ids
  bool bonus = false;       ///< every draft was kept and the last token came from p_{k+1}
};

/// \brief Verifies `proposal` against the target's logits from one forward over
/// [last accepted token, x_1 .. x_k]. Row i of `target_logits` predicts position
/// `first_position + i`; draft x_{i+1} sits at that position. Greedy or sampled by `params`
/// (see the file comment). Throws `InvalidArgument` for a malformed proposal (token outside the
/// vocabulary, q rows of the wrong count or size).
/// \param target_logits  (k + 1, vocab) row-major
/// \param vocab          the target's vocabulary size
/// \param proposal       k draft tokens and their q (empty q = point masses)
/// \param params         the request's sampling parameters (validated)
/// \param first_position position of x_1 (= number of accepted tokens before this round)
VerifyResult verify_proposal(const std::vector<float>& target_logits, int vocab,
                             const Proposal& proposal, const SamplingParams& params,
                             int64_t first_position);

}  // namespace nanoserve::speculative
