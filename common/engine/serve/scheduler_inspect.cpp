// Scheduler: what others read of it — the queues, a request by id — and the invariants the
// tests check after every step (scheduler.h, `check_invariants`).
#include <algorithm>
#include <string>

#include "common/engine/serve/scheduler.h"
#include "common/error.h"

namespace nanoserve::engine {

std::vector<int64_t> Scheduler::waiting_ids() const {
  std::vector<int64_t> ids;
  for (const Request* r : waiting_) ids.push_back(r->id());
  return ids;
}

std::vector<int64_t> Scheduler::swapped_ids() const {
  std::vector<int64_t> ids;
  for (const Request* r : swapped_) ids.push_back(r->id());
  return ids;
}

std::vector<int64_t> Scheduler::running_ids() const {
  std::vector<int64_t> ids;
  for (const Request* r : running_) ids.push_back(r->id());
  return ids;
}

const Request& Scheduler::request(int64_t id) const {
  auto it = live_.find(id);
  if (it == live_.end()) {
    throw InvalidArgument("Scheduler::request: request " + std::to_string(id) +
                          " is not waiting or running");
  }
  return *it->second;
}

const Request* Scheduler::find(int64_t id) const {
  if (auto it = live_.find(id); it != live_.end()) return it->second.get();
  for (const auto& [parent, group] : groups_) {
    for (const Request& r : group.done) {
      if (r.id() == id) return &r;
    }
  }
  return nullptr;
}

std::string Scheduler::check_invariants() const {
  if (std::string kv = kv_.check_invariants(); !kv.empty()) return kv;
  const std::string name = "scheduler: ";
  if (live_.size() != waiting_.size() + running_.size() + swapped_.size()) {
    return name + std::to_string(live_.size()) + " live requests but " +
           std::to_string(waiting_.size()) + " waiting + " + std::to_string(running_.size()) +
           " running + " + std::to_string(swapped_.size()) + " swapped";
  }
  if (kv_.num_swapped() != static_cast<int>(swapped_.size())) {
    return name + "the KV manager has " + std::to_string(kv_.num_swapped()) +
           " swapped tables for " + std::to_string(swapped_.size()) + " swapped requests";
  }
  for (const Request* r : swapped_) {
    if (r->status != RequestStatus::kSwapped || !kv_.is_swapped(r->id()) ||
        kv_.swapped_table(r->id()).num_tokens() != r->seq.num_computed_tokens) {
      return name + "swapped request " + std::to_string(r->id()) + " has status " +
             to_string(r->status) + " or a host table that does not cover its computed tokens";
    }
  }
  if (num_seats() > config_.max_num_seqs) {
    return name + std::to_string(num_seats()) + " running sequences (samples to fork included) > " +
           "max_num_seqs";
  }
  for (std::size_t i = 1; i < running_.size(); ++i) {  // a group's samples stay together
    if (!same_group(*running_[i - 1], *running_[i]) &&
        std::any_of(running_.begin() + std::ptrdiff_t(i), running_.end(),
                    [&](const Request* r) { return same_group(*r, *running_[i - 1]); })) {
      return name + "the samples of request " + std::to_string(running_[i - 1]->group_id()) +
             " are not together in the running list";
    }
  }
  if (kv_.num_sequences() != static_cast<int>(running_.size() + handed_off_.size())) {
    return name + "the KV manager has " + std::to_string(kv_.num_sequences()) +
           " tables for " + std::to_string(running_.size()) + " running and " +
           std::to_string(handed_off_.size()) + " handed-off requests";
  }
  for (const Request* r : waiting_) {
    const std::string who = name + "waiting request " + std::to_string(r->id());
    if (r->status != RequestStatus::kWaiting && r->status != RequestStatus::kPreempted) {
      return who + " has status " + to_string(r->status);
    }
    if (kv_.contains(r->id()) || r->seq.num_computed_tokens != 0) {
      return who + " holds KV (blocks or computed tokens)";
    }
  }
  for (const Request* r : running_) {
    const std::string who = name + "running request " + std::to_string(r->id());
    if (r->status != RequestStatus::kRunning) return who + " has status " + to_string(r->status);
    if (!kv_.contains(r->id())) return who + " has no block table";
    const int slots = kv_.block_table(r->id()).num_tokens();
    const int drafts = step_in_flight_ ? int(r->draft.tokens.size()) : 0;
    if (slots < r->seq.num_computed_tokens || slots > r->seq.num_tokens() + drafts ||
        (!step_in_flight_ && slots != r->seq.num_computed_tokens)) {
      return who + " has " + std::to_string(slots) + " slots for " +
             std::to_string(r->seq.num_computed_tokens) + " computed of " +
             std::to_string(r->seq.num_tokens()) + " tokens";
    }
  }
  return {};
}

}  // namespace nanoserve::engine
