#include "common/speculative/draft_model_proposer.h"

#include <algorithm>

#include "common/error.h"
#include "common/sampling/rng.h"

namespace nanoserve::speculative {

DraftModelProposer::DraftModelProposer(RollbackDecoder& draft, int target_vocab_size)
    : draft_(draft) {
  if (draft.vocab_size() != target_vocab_size) {
    throw InvalidArgument("speculative decoding: draft model '" + draft.name() + "' has " +
                          std::to_string(draft.vocab_size()) + " tokens but the target has " +
                          std::to_string(target_vocab_size) +
                          "; a draft must share the target's tokenizer");
  }
}

void DraftModelProposer::reset() {
  draft_.reset();
  cached_.clear();
}

void DraftModelProposer::begin(const std::vector<int>& prompt) {
  reset();
  if (prompt.size() > 1 && int(prompt.size()) <= draft_.max_seq_len()) {
    cached_.assign(prompt.begin(), prompt.end() - 1);
    draft_.forward(cached_, 0);  // logits unused: the first propose feeds the last token
  }
}

Proposal DraftModelProposer::propose(const std::vector<int>& context, int gamma,
                                     const SamplingParams& params) {
  const int L = int(context.size());
  if (L == 0) throw InvalidArgument("DraftModelProposer::propose: empty context");
  // x_i is fed at position L-1+i for i < γ, so positions up to L+γ-2 must fit the draft.
  gamma = std::min(gamma, draft_.max_seq_len() - L + 1);
  Proposal out;
  if (gamma <= 0) return out;

  // Roll back to the longest prefix the cache shares with the context, keeping at least the
  // last context token to feed (its logits give q_1).
  const auto mismatch = std::mismatch(cached_.begin(), cached_.end(), context.begin(),
                                      context.end());
  const int keep = std::min(int(mismatch.first - cached_.begin()), L - 1);
  draft_.truncate(keep);
  cached_.resize(size_t(keep));
  std::vector<int> feed(context.begin() + keep, context.end());
  std::vector<float> logits = draft_.forward(feed, keep);  // (vocab)
  ++forwards_;
  cached_.insert(cached_.end(), feed.begin(), feed.end());

  const int vocab = draft_.vocab_size();
  for (int i = 0; i < gamma; ++i) {
    const int pos = L + i;  // where x_{i+1} will sit
    std::vector<double> q = probabilities(logits.data(), vocab, params);
    const int x = params.greedy()
                      ? argmax(logits.data(), vocab)
                      : sample_from(q, uniform01(params.seed, uint64_t(pos),
                                                 RngStream::kDraftSample));
    out.tokens.push_back(x);
    out.q.push_back(std::move(q));
    if (i + 1 < gamma) {
      logits = draft_.forward({x}, pos);
      ++forwards_;
      cached_.push_back(x);
    }
  }
  return out;
}

}  // namespace nanoserve::speculative
