#pragma once
/// \file
/// \brief `DraftModelProposer`: a small model that shares the target's tokenizer drafts γ
/// tokens autoregressively (Leviathan et al. 2023; Chen et al. 2023).
///
/// Its KV cache follows the accepted sequence lazily. Say the last round drafted d1 d2 d3
/// after t0 .. t_{m-1}, the target kept d1 and replaced d2 by y; at `propose(context, γ)`:
///
///     cached (draft KV):  t0 ... t_{m-1} d1 d2        (d3 was never fed)
///     context:            t0 ... t_{m-1} d1 y         L = m + 2 tokens
///     1. keep the longest common prefix, but never the last context token (its logits are
///        needed): truncate(m + 1) forgets d2 — the rollback of the rejected draft
///     2. feed what is missing: [y] at position L-1    → q_1, x_1 ~ q_1
///     3. feed x_1 → q_2, x_2 ~ q_2, …, up to x_γ (x_γ itself is not fed: if it is accepted,
///        the next round feeds it together with the bonus token)
///
/// So a round costs γ draft forwards, the first over one or two tokens. The draft never sees
/// the target: only the accepted tokens.

#include <cstdint>
#include <string>
#include <vector>

#include "common/speculative/proposer.h"
#include "common/speculative/rollback_decoder.h"

namespace nanoserve::speculative {

/// \brief Drafts with a model behind any `RollbackDecoder` (the oracle here, a `ModelRunner`
/// on the GPU later).
class DraftModelProposer final : public Proposer {
 public:
  /// \brief Drafts with `draft` (which must outlive the proposer) for a target whose vocabulary
  /// has `target_vocab_size` tokens. Throws `InvalidArgument` when the sizes differ: a draft
  /// must share the target's tokenizer, or its token ids mean different text.
  DraftModelProposer(RollbackDecoder& draft, int target_vocab_size);
  /// \brief Empties the draft's cache.
  void reset() override;
  /// \brief `reset()`, then prefills all prompt tokens but the last (the first `propose` feeds
  /// it and gets q_1 from its logits), as the target does.
  void begin(const std::vector<int>& prompt) override;
  /// \brief γ tokens x_i ~ q_i (argmax when greedy, else `sample_from(q_i,
  /// uniform01(seed, L+i-1, kDraftSample))`), with q_i = `probabilities(draft logits, params)`.
  /// Fewer than γ only where the draft's context ends.
  Proposal propose(const std::vector<int>& context, int gamma,
                   const SamplingParams& params) override;
  /// \brief The draft's vocabulary size.
  int vocab_size() const override { return draft_.vocab_size(); }
  /// \brief "draft:" + the draft backend's name.
  std::string name() const override { return "draft:" + draft_.name(); }
  /// \brief Draft forward passes in `propose` so far.
  int64_t forwards() const override { return forwards_; }
  /// \brief Tokens whose keys and values the draft's cache holds (position j = element j).
  const std::vector<int>& cached_tokens() const { return cached_; }

 private:
  RollbackDecoder& draft_;
  std::vector<int> cached_;  // (draft_.length()) the tokens behind the draft's KV
  int64_t forwards_ = 0;
};

}  // namespace nanoserve::speculative
