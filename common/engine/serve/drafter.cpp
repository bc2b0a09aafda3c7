#include "common/engine/serve/drafter.h"

#include "common/error.h"
#include "common/speculative/ngram_proposer.h"

namespace nanoserve::engine {

NgramDrafter::NgramDrafter(int max_ngram, int min_ngram)
    : max_ngram_(max_ngram), min_ngram_(min_ngram) {
  speculative::prompt_lookup({}, 0, max_ngram, min_ngram);  // validates the range
}

void NgramDrafter::propose(std::vector<DraftRequest>& batch) {
  for (DraftRequest& d : batch) {
    d.proposal.tokens =
        speculative::prompt_lookup(d.request->seq.token_ids, d.gamma, max_ngram_, min_ngram_);
    d.proposal.q.clear();
  }
}

std::string NgramDrafter::name() const {
  return "ngram(" + std::to_string(max_ngram_) + ".." + std::to_string(min_ngram_) + ")";
}

}  // namespace nanoserve::engine
