#pragma once
/// \file
/// \brief `Drafter`: who proposes the draft tokens of speculative decoding inside the
/// continuous-batching engine (chapter 7) — for every running request that speculates, a few
/// guesses of its next tokens, all requests at once, between two steps:
///
///     step k:   schedule → execute (verify last step's drafts) → update
///               └─► Scheduler::propose_drafts(drafter): requests decoding with γ > 0
///                     drafter.propose(batch)   each DraftRequest: context, γ', params → Proposal
///     step k+1: schedule puts each request's drafts after its last token (1 + k rows) …
///
/// Chapter 6's `Proposer` drafts for one sequence at a time; a `Drafter` drafts for the whole
/// running batch, so a draft model can run one batched forward per draft position instead of
/// one per request. Two ship with the engine: `NgramDrafter` (prompt lookup, here) and
/// `DraftModelDrafter` (a smaller model over its own paged KV, draft_model_drafter.h).
///
/// Exactness does not depend on the drafter: the rejection rule keeps the target's
/// distribution for any proposal whose q rows are the distributions the tokens were really
/// drawn from (common/speculative/rejection.h), and greedy verification keeps plain greedy
/// decoding's tokens for any proposal at all.

#include <cstdint>
#include <string>
#include <vector>

#include "common/engine/serve/request.h"
#include "common/speculative/proposer.h"

namespace nanoserve::engine {

/// \brief One request's part of a drafting call.
///
/// \par Example
/// \snippet tests/ch07/test_examples_stack.cpp Drafter
struct DraftRequest {
  const Request* request = nullptr;  ///< context = its token ids; params = its sampling
  int gamma = 0;                     ///< most draft tokens to propose (>= 1)
  speculative::Proposal proposal;    ///< filled by the drafter: up to `gamma` tokens (and q)
};

/// \brief Proposes draft tokens for a batch of requests.
///
/// \par Example
/// \snippet tests/ch07/test_examples_stack.cpp Drafter
class Drafter {
 public:
  virtual ~Drafter() = default;
  /// \brief Fills every entry's `proposal`: up to `gamma` tokens that follow the request's
  /// tokens, drawn with its sampling parameters (random draws from
  /// `uniform01(seed, position, RngStream::kDraftSample)`), and their q rows (empty when the
  /// guesses are deterministic). May propose fewer, or none.
  virtual void propose(std::vector<DraftRequest>& batch) = 0;
  /// \brief The requests still running; a drafter with per-request state (a draft model's KV)
  /// forgets every other one. Called before each `propose`.
  virtual void retain(const std::vector<std::int64_t>& running_ids) { (void)running_ids; }
  /// \brief The vocabulary its tokens and q rows index (0 = any, e.g. n-grams).
  virtual int vocab_size() const = 0;
  /// \brief A short label for reports ("ngram(3..1)", "draft:stories260K-l2").
  virtual std::string name() const = 0;
};

/// \brief Prompt lookup for every request (`speculative::prompt_lookup`): deterministic
/// guesses, so no q rows.
///
/// \par Example
/// \snippet tests/ch07/test_examples_stack.cpp Drafter
class NgramDrafter final : public Drafter {
 public:
  /// \brief Tries suffixes of `max_ngram` down to `min_ngram` tokens. Throws `InvalidArgument`
  /// unless `1 <= min_ngram <= max_ngram`.
  explicit NgramDrafter(int max_ngram = 3, int min_ngram = 1);
  /// \brief `prompt_lookup(request tokens, gamma, max_ngram, min_ngram)` for each entry.
  void propose(std::vector<DraftRequest>& batch) override;
  /// \brief 0: it proposes ids already in the context.
  int vocab_size() const override { return 0; }
  /// \brief "ngram(max..min)".
  std::string name() const override;

 private:
  int max_ngram_;
  int min_ngram_;
};

}  // namespace nanoserve::engine
