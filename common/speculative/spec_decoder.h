#pragma once
/// \file
/// \brief `SpecDecoder`: the speculative decoding loop (Leviathan et al. 2023, Algorithm 1;
/// Chen et al. 2023, Algorithm 2) over a target `RollbackDecoder` and any `Proposer`.
///
/// One round, with L accepted tokens t_0 .. t_{L-1} and the target's KV holding 0 .. L-2:
///
///     γ' = min(γ, tokens left − 1, context − 1 − L)          (the bonus token must fit too)
///     x_1 .. x_k = proposer.propose(t, γ')                    k <= γ' draft tokens, with q_i
///     logits = target.forward_all([t_{L-1}, x_1 .. x_k], L-1) (k+1 rows: p_1 .. p_{k+1})
///     verify → n accepted drafts + 1 token (correction y or bonus from p_{k+1})
///     target.truncate(L + n)                                  (rejected drafts' KV forgotten)
///     append x_1 .. x_n, y — stopping at a stop token, the budget or the context end,
///     exactly where plain `generate` would have stopped
///
/// Each round costs one target forward and produces 1 .. k+1 tokens. With a per-token
/// acceptance rate α and a draft that costs c target forwards per token, the expected speedup
/// is (1 − α^(γ+1)) / ((1 − α)(γc + 1)) (Leviathan et al. 2023, Theorem 3.8) — when a verify
/// over γ+1 positions costs about one decode step, i.e. when decoding is memory-bound.
///
/// Output guarantee: greedy requests produce plain greedy decoding's tokens; sampled requests
/// produce tokens distributed exactly as plain sampling's (rejection.h), with every random
/// draw a function of (seed, position) only — so a request gives the same tokens however it
/// is batched. Sampled tokens are *not* identical to plain sampling's, though: they depend on
/// the draft, and on where rounds end (a bonus token uses the sampler's own draw, a judged
/// draft the acceptance draw). Token identity would need a coupled rule — the draft samples
/// with the target's own uniform and is kept only on an exact match — which accepts less often.

#include <cstdint>
#include <functional>
#include <vector>

#include "common/generation/generate.h"
#include "common/speculative/proposer.h"
#include "common/speculative/rollback_decoder.h"

namespace nanoserve::speculative {

/// \brief What one round did (for observers, tests and traces).
struct SpecRound {
  int first_position = 0;   ///< L: position of the first draft token
  int gamma = 0;            ///< γ' asked of the proposer after clipping
  int proposed = 0;         ///< k: draft tokens it returned
  int accepted = 0;         ///< n: draft tokens the target kept
  std::vector<int> appended;  ///< tokens added to the output this round (after stop handling)
};

/// \brief How to speculate.
struct SpecOptions {
  int gamma = 4;          ///< draft tokens per round (>= 1); the start value when adaptive
  /// \brief Adjust γ after each round as Hugging Face's assisted generation does
  /// (`num_assistant_tokens_schedule="heuristic"`): +2 when every draft was kept, −1 otherwise.
  bool adaptive = false;
  int max_gamma = 8;      ///< upper bound of adaptive γ (>= gamma)
  /// \brief Called after each round, once the target's KV is rolled back (may be empty).
  std::function<void(const SpecRound&)> on_round;
};

/// \brief Counters and timers of one speculative generation.
struct SpecStats {
  int64_t rounds = 0;          ///< verify forwards of the target (the prefill not counted)
  int64_t proposed = 0;        ///< draft tokens proposed
  int64_t accepted = 0;        ///< draft tokens the rule accepted
  int64_t rejected = 0;        ///< rounds that ended with a rejected draft
  int64_t generated = 0;       ///< tokens produced
  int64_t draft_forwards = 0;  ///< forward passes of the proposer's model
  double prefill_seconds = 0;  ///< the target's prompt forward
  double draft_prefill_seconds = 0;  ///< `Proposer::begin` (the draft's prompt forward)
  double target_seconds = 0;   ///< all verify forwards of the target
  double draft_seconds = 0;    ///< all `propose` calls
  double decode_seconds = 0;   ///< wall time of all rounds: the two above plus verification
  /// \brief Rounds by draft tokens offered: entry k counts rounds whose proposer offered k
  /// (0 when an n-gram finds no match, fewer than γ near the end of a generation).
  std::vector<int64_t> rounds_offering;
  /// \brief α: accepted / (accepted + rejected) — the drafts the rule actually judged (those
  /// after a rejection in the same round never are). 0 when nothing was judged.
  double acceptance_rate() const;
  /// \brief Generated tokens per target verify forward (1 = no gain; at most γ+1).
  double tokens_per_target_forward() const;
  /// \brief Prefill time: the target's and the draft's.
  double total_prefill_seconds() const { return prefill_seconds + draft_prefill_seconds; }
};

/// \brief A generation (same shape as plain `generate`'s) and its speculation statistics.
struct SpecResult {
  GenerateResult generation;  ///< tokens, stop reason, timings
  SpecStats stats;            ///< acceptance, forwards, times
};

/// \brief Generates with a target and a proposer (see the file comment).
class SpecDecoder {
 public:
  /// \brief Keeps references to `target` and `proposer` (they must outlive the decoder).
  /// Throws `InvalidArgument` for γ < 1, `max_gamma < gamma`, or a proposer tied to another
  /// vocabulary size than the target's.
  SpecDecoder(RollbackDecoder& target, Proposer& proposer, SpecOptions options = {});

  /// \brief Runs one request from scratch (both caches reset). Same validation, stop rules and
  /// `on_token` callbacks as `generate`.
  SpecResult generate(const std::vector<int>& prompt, const GenerateOptions& options);

 private:
  RollbackDecoder& target_;
  Proposer& proposer_;
  SpecOptions options_;
};

/// \brief Expected tokens one round yields when each draft is accepted independently with
/// probability α: 1 + α + … + α^γ = (1 − α^(γ+1)) / (1 − α), γ+1 at α = 1 (Leviathan et al.
/// 2023, the expected number of tokens per run of Algorithm 1).
/// \param alpha per-token acceptance rate in [0, 1]
/// \param gamma draft tokens per round
double expected_tokens_per_round(double alpha, int gamma);

/// \brief Expected tokens per round over the rounds a run really had: rounds offering k
/// drafts yield `expected_tokens_per_round(alpha, k)` (a round offering none yields 1), so
/// Σ_k n_k E(α, k) / Σ_k n_k. Equals the γ formula when every round offered γ; 0 for no rounds.
/// \param alpha           per-token acceptance rate in [0, 1]
/// \param rounds_offering entry k: rounds whose proposer offered k drafts (`SpecStats`)
double expected_tokens_per_round(double alpha, const std::vector<int64_t>& rounds_offering);

/// \brief Leviathan et al. 2023's expected walltime improvement (Theorem 3.8):
/// (1 − α^(γ+1)) / ((1 − α)(γc + 1)), with the limit (γ+1)/(γc+1) at α = 1.
/// \param alpha per-token acceptance rate in [0, 1]
/// \param gamma draft tokens per round
/// \param c     cost of one draft step relative to one target step
double predicted_speedup(double alpha, int gamma, double c);

/// \brief The same prediction over the rounds a run really had: Σ_k n_k E(α, k) /
/// Σ_k n_k (k·c + verify), where `verify` is the cost of a verification forward relative to
/// one target step (1 in the paper's model). Rounds that offer nothing cost a target step
/// and yield one token — what an n-gram proposer without a match does. 0 for no rounds.
/// \param alpha           per-token acceptance rate in [0, 1]
/// \param rounds_offering entry k: rounds whose proposer offered k drafts (`SpecStats`)
/// \param c               cost of one draft step relative to one target step
/// \param verify          cost of one verification forward relative to one target step
double predicted_speedup(double alpha, const std::vector<int64_t>& rounds_offering, double c,
                         double verify = 1.0);

}  // namespace nanoserve::speculative
