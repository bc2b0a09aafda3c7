// Scheduler: speculative decoding (chapter 7, rule 5 of scheduler.h; vLLM v1's design). Between
// steps `propose_drafts` asks a Drafter for the drafts of every speculating request; the next
// step verifies them in the batched pass, and `update` checks what the executor returned
// (`accepted_drafts`) before keeping the accepted drafts and the token after them.
//
//     update(k)   A: … t            propose_drafts: A.draft = d1 d2 d3 (γ' = min(γ, left − 1, …))
//     step k+1    rows: t d1 d2 d3  the executor returns d1 d2 z -1: two kept, z after them
#include <algorithm>
#include <stdexcept>
#include <string>

#include "common/engine/serve/scheduler.h"
#include "common/error.h"

namespace nanoserve::engine {

int Scheduler::accepted_drafts(const ScheduledSequence& s, const int* entries) {
  const int k = s.num_draft_tokens;
  int emitted = 0;
  while (emitted <= k && entries[emitted] >= 0) ++emitted;
  bool ok = emitted >= 1;
  for (int j = emitted; j <= k; ++j) ok = ok && entries[j] == -1;
  for (int j = 0; ok && j + 1 < emitted; ++j) {
    ok = entries[j] == s.request->draft.tokens[std::size_t(j)];
  }
  if (!ok) {
    std::string got;
    for (int j = 0; j <= k; ++j) got += (j ? " " : "") + std::to_string(entries[j]);
    throw InvalidArgument("Scheduler::update: request " + std::to_string(s.seq_id) +
                          " verified " + std::to_string(k) + " drafts but got [" + got +
                          "]: expected the accepted drafts, one token, then -1 padding");
  }
  return emitted - 1;
}

void Scheduler::propose_drafts(Drafter& drafter) {
  if (step_in_flight_) {
    throw std::logic_error("Scheduler::propose_drafts: a step is in flight (call it after update)");
  }
  drafter.retain(running_ids());
  std::vector<DraftRequest> batch;
  std::vector<Request*> owners;
  for (Request* r : running_) {
    if (r->num_speculative_tokens == 0 || !r->draft.tokens.empty()) continue;
    if (r->seq.num_computed_tokens != r->seq.num_tokens() - 1) continue;  // still prefilling
    const auto group = groups_.find(r->id());
    if (group != groups_.end() && !group->second.forked) continue;  // its samples fork first
    const int left = r->max_tokens - r->num_output_tokens();
    const int gamma = std::min({r->num_speculative_tokens, left - 1,
                                config_.max_model_len - 1 - r->seq.num_tokens()});
    if (gamma < 1) continue;
    batch.push_back({r, gamma, {}});
    owners.push_back(r);
  }
  if (batch.empty()) return;
  drafter.propose(batch);
  const int vocab = drafter.vocab_size();
  for (std::size_t i = 0; i < batch.size(); ++i) {
    speculative::Proposal& p = batch[i].proposal;
    const std::string who = "Scheduler::propose_drafts: drafter '" + drafter.name() +
                            "' for request " + std::to_string(owners[i]->id());
    if (int(p.tokens.size()) > batch[i].gamma) {
      throw InvalidArgument(who + " proposed " + std::to_string(p.tokens.size()) +
                            " tokens for gamma " + std::to_string(batch[i].gamma));
    }
    if (!p.q.empty() && p.q.size() != p.tokens.size()) {
      throw InvalidArgument(who + " gave " + std::to_string(p.q.size()) + " q rows for " +
                            std::to_string(p.tokens.size()) + " tokens");
    }
    for (int t : p.tokens) {
      if (t < 0 || (vocab > 0 && t >= vocab)) {
        throw InvalidArgument(who + " proposed token " + std::to_string(t) +
                              " outside its vocabulary");
      }
    }
    owners[i]->draft = std::move(p);
  }
}

}  // namespace nanoserve::engine
