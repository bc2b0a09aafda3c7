#include "common/engine/serve/scheduler.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "common/error.h"

namespace nanoserve::engine {

namespace {

const SchedulerConfig& validated(const SchedulerConfig& config) {
  config.validate();
  return config;
}

}  // namespace

void SchedulerConfig::validate() const {
  auto positive = [](const char* field, int value) {
    if (value < 1) {
      throw InvalidArgument(std::string("scheduler config: ") + field + " = " +
                            std::to_string(value) + " must be >= 1");
    }
  };
  positive("max_num_seqs", max_num_seqs);
  positive("max_num_batched_tokens", max_num_batched_tokens);
  positive("max_model_len", max_model_len);
  positive("num_kv_blocks", num_kv_blocks);
  positive("block_size", block_size);
  if (num_host_blocks < 0) {
    throw InvalidArgument("scheduler config: num_host_blocks = " + std::to_string(num_host_blocks) +
                          " must be >= 0");
  }
  if (preemption_mode == PreemptionMode::kSwap && num_host_blocks == 0) {
    throw InvalidArgument("scheduler config: preemption_mode swap needs a host pool "
                          "(num_host_blocks > 0)");
  }
  if (!enable_chunked_prefill && max_num_batched_tokens < max_model_len) {
    throw InvalidArgument(
        "scheduler config: max_num_batched_tokens = " + std::to_string(max_num_batched_tokens) +
        " is smaller than max_model_len = " + std::to_string(max_model_len) +
        " with chunked prefill off: a prompt (or a preempted request's recomputation) that "
        "does not fit one step could never run; raise the budget or enable chunked prefill");
  }
}

Scheduler::Scheduler(const SchedulerConfig& config, Detokenizer detokenize)
    : config_(validated(config)),
      detokenize_(std::move(detokenize)),
      kv_(config.num_kv_blocks, config.block_size, config.enable_prefix_caching,
          &xxh3_block_hash, config.num_host_blocks) {}

// ─── requests in and out ───────────────────────────────────────────────────────────────────

std::string Scheduler::rejection_reason(const Request& r) const {
  if (r.prompt_len > config_.max_model_len) {
    return "prompt of " + std::to_string(r.prompt_len) + " tokens is longer than the context (" +
           "max_model_len = " + std::to_string(config_.max_model_len) + ")";
  }
  if (r.n > config_.max_num_seqs) {
    return std::to_string(r.n) + " parallel samples need " + std::to_string(r.n) +
           " running sequences but max_num_seqs = " + std::to_string(config_.max_num_seqs);
  }
  const int blocks = (r.prompt_len + config_.block_size - 1) / config_.block_size;
  if (blocks > config_.num_kv_blocks) {
    return "prompt of " + std::to_string(r.prompt_len) + " tokens needs " +
           std::to_string(blocks) + " KV blocks but the whole pool has " +
           std::to_string(config_.num_kv_blocks);
  }
  return {};
}

void Scheduler::add_request(Request request) {
  request.validate_new();
  if (live_.count(request.id()) != 0) {
    throw InvalidArgument("Scheduler::add_request: request " + std::to_string(request.id()) +
                          " is already queued or running");
  }
  if (!request.stop_strings.empty() && !detokenize_) {
    throw InvalidArgument("Scheduler::add_request: request " + std::to_string(request.id()) +
                          " has stop strings but the scheduler has no detokenizer");
  }
  if (std::string reason = rejection_reason(request); !reason.empty()) {
    const double t = request.arrival_s;
    finish_request(request, FinishReason::kRejected, std::move(reason), t);
    ++stats_.num_rejected;
    ++stats_.num_finished;
    finished_.push_back(std::move(request));
    return;
  }
  auto owned = std::make_unique<Request>(std::move(request));
  if (owned->n > 1) groups_[owned->id()].n = owned->n;
  waiting_.push_back(owned.get());
  live_.emplace(owned->id(), std::move(owned));
}

void Scheduler::retire(Request& r) {
  if (kv_.contains(r.id()) || kv_.is_swapped(r.id())) kv_.free(r.id());
  ++stats_.num_finished;
  stats_.num_cancelled += r.finish_reason == FinishReason::kCancelled;
  const int64_t id = r.id();
  auto group = groups_.find(r.group_id());
  if (group == groups_.end()) {
    finished_.push_back(std::move(r));
  } else {  // a group is handed out when its last sample finishes, in sample order
    Group& g = group->second;
    g.done.push_back(std::move(r));
    if (--g.live == 0) {
      std::sort(g.done.begin(), g.done.end(), [](const Request& a, const Request& b) {
        return a.sample_index < b.sample_index;
      });
      for (Request& member : g.done) finished_.push_back(std::move(member));
      groups_.erase(group);
    }
  }
  live_.erase(id);  // destroys the moved-from request; callers have unlinked it from queues
}

std::vector<Request> Scheduler::take_finished() { return std::exchange(finished_, {}); }

bool Scheduler::cancel(int64_t id, double now_s) {
  auto it = live_.find(id);
  if (it == live_.end()) return false;
  if (step_in_flight_) {  // its slots may be in the executor's hands: finish it in update()
    if (std::find(cancel_pending_.begin(), cancel_pending_.end(), id) == cancel_pending_.end()) {
      cancel_pending_.push_back(id);
    }
    return true;
  }
  // A sample cancels its whole group: the samples finish together.
  for (Request* r : members_of(*it->second)) {
    if (r->status == RequestStatus::kRunning) {
      running_.erase(std::find(running_.begin(), running_.end(), r));
    } else if (r->status == RequestStatus::kSwapped) {
      swapped_.erase(std::find(swapped_.begin(), swapped_.end(), r));
    } else {
      waiting_.erase(std::find(waiting_.begin(), waiting_.end(), r));
    }
    finish_request(*r, FinishReason::kCancelled, "cancelled", now_s);
    retire(*r);
  }
  return true;
}

std::string Scheduler::capacity_detail() const {
  return "KV cache capacity: the pool's " + std::to_string(config_.num_kv_blocks) +
         " blocks hold " + std::to_string(config_.num_kv_blocks * config_.block_size) +
         " tokens";
}

// ─── schedule ──────────────────────────────────────────────────────────────────────────────

void Scheduler::preempt(Request& victim, SchedulerOutput& out) {
  victim.draft = {};  // drafts follow the last token; a preempted request starts over
  // BEGIN EXERCISE ch04.1 "Preemption by recomputation" points=15 minutes=30
  // HINT: Free the victim's blocks, forget its computed tokens, mark it kPreempted and count
  // HINT: the preemption (on the request and in stats_). The victim is the newest running
  // HINT: request: pop it from running_, put it at the FRONT of waiting_, record its id in out.
  // STUB: (void)victim; (void)out;
  // STUB: throw Error("exercise ch04.1 not done: Scheduler::preempt");
  // Recompute, not swap: the KV is dropped and rebuilt from the tokens when the request is
  // admitted again (cheaply, if its blocks are still in the prefix cache by then).
  kv_.free(victim.id());
  victim.seq.num_computed_tokens = 0;
  victim.status = RequestStatus::kPreempted;
  ++victim.num_preemptions;
  ++stats_.num_preemptions;
  running_.pop_back();  // the victim is always the most recently admitted request
  waiting_.push_front(&victim);
  out.preempted_ids.push_back(victim.id());
  // END EXERCISE
}

void Scheduler::schedule_running(SchedulerOutput& out, int& budget, double now_s) {
  // Running requests in order; a request's parallel samples (contiguous) are one unit that
  // gets its rows, keeps its place or is preempted as a whole.
  for (std::size_t i = 0; i < running_.size() && budget > 0;) {
    const std::size_t size = running_members(*running_[i]).size();
    const std::vector<Request*> unit(running_.begin() + std::ptrdiff_t(i),
                                     running_.begin() + std::ptrdiff_t(i + size));
    // Rows: each sample as many of its tokens as the budget allows; drafts ride along when
    // the run reaches the last token.
    std::vector<int> n(size), k(size);
    for (std::size_t m = 0, left = std::size_t(budget); m < size; ++m) {
      const Request& r = *unit[m];
      const int rest = r.seq.num_tokens() - r.seq.num_computed_tokens;
      n[m] = std::min(rest, int(left));
      k[m] = n[m] == rest ? std::min(int(r.draft.tokens.size()), int(left) - n[m]) : 0;
      left -= std::size_t(n[m] + k[m]);
    }
    // Blocks for the tokens (not the drafts: they never cost a preemption), summed over the
    // samples on today's sharing — an upper bound, as a sample's copy-on-write makes the next
    // one the sole owner.
    const auto blocks_needed = [&](std::size_t from) {
      int blocks = 0;
      for (std::size_t m = from; m < size; ++m) {
        if (n[m] > 0) blocks += kv_.num_blocks_to_append(unit[m]->seq, n[m]);
      }
      return blocks;
    };
    const auto fits = [&] { return blocks_needed(0) <= kv_.pool().num_free_blocks(); };
    // Make room: preempt from the back (newest first; a group as one) until the unit fits or
    // is the back.
    while (!fits() && !same_group(*running_.back(), *unit[0])) preempt_group(*running_.back(), out);
    const bool alone = !fits();
    // The unit is now the newest. Either it yields to the older ones before it (which ends
    // the loop), or it runs alone with the whole pool: a sample that still does not fit stops
    // growing here (finish reason kLength, "KV cache capacity").
    // (Blocks held by handed-off requests, chapter 9, come back once their KV is sent: the
    // unit waits for them instead.)
    if (alone && (running_.size() > size || !handed_off_.empty())) {
      preempt_group(*unit[0], out);
      return;
    }
    for (std::size_t m = 0; m < size; ++m) {
      Request& r = *unit[m];
      if (n[m] == 0) continue;
      if (alone && !kv_.can_append(r.seq, n[m])) {
        running_.erase(std::find(running_.begin(), running_.end(), &r));
        finish_request(r, FinishReason::kLength, capacity_detail(), now_s);
        retire(r);
        continue;
      }
      // Drafts only where their blocks leave room for the samples after this one.
      const int room = kv_.pool().num_free_blocks() - blocks_needed(m + 1);
      if (k[m] > 0 && kv_.num_blocks_to_append(r.seq, n[m], k[m]) > room) k[m] = 0;
      r.draft.tokens.resize(std::size_t(k[m]));
      if (!r.draft.q.empty()) r.draft.q.resize(std::size_t(k[m]));
      // Draft slots are reserved but not cached until verification (KVCacheManager).
      const std::vector<BlockCopy> copies = kv_.append_slots(r.seq, n[m], k[m]);
      out.block_copies.insert(out.block_copies.end(), copies.begin(), copies.end());
      out.add(r, kv_.block_table(r.id()), r.seq.num_computed_tokens, n[m], k[m]);
      fork_if_prefilled(r, out);
      budget -= n[m] + k[m];
    }
    if (alone) return;
    i += size;
  }
}

void Scheduler::schedule_waiting(SchedulerOutput& out, int& budget, double now_s) {
  while (!waiting_.empty() && budget > 0 && num_seats() < config_.max_num_seqs) {
    Request& r = *waiting_.front();
    if (members_of(r).size() > 1) {  // samples forked earlier, preempted together
      if (!admit_group(r, out, budget, now_s)) break;
      continue;
    }
    const auto group = groups_.find(r.id());
    const int seats = group != groups_.end() && !group->second.forked ? r.n : 1;
    if (num_seats() + seats > config_.max_num_seqs) break;  // room for its samples too
    const int cached = kv_.num_cached_tokens(r.seq);
    const int rest = r.seq.num_tokens() - cached;
    // BEGIN EXERCISE ch04.2 "Chunked prefill: admit what the token budget allows" points=15 minutes=25
    // HINT: n is how many of the rest tokens run this step. With chunked prefill, as many as
    // HINT: the budget allows; without it, the whole rest or nothing (break: wait for a fresh
    // HINT: budget next step).
    // STUB: const int n = rest;
    if (!config_.enable_chunked_prefill && rest > budget) break;  // wait for a fresh budget
    const int n = std::min(rest, budget);
    // END EXERCISE
    if (!kv_.can_allocate(r.seq, n)) {
      // FCFS: nobody overtakes the head; it waits for blocks (held by running requests, or
      // by handed-off ones until their KV is sent).
      if (!running_.empty() || !handed_off_.empty()) break;
      // The whole pool is free and still too small: a preempted request whose tokens
      // outgrew the pool (chunked prefill off) would otherwise wait forever.
      waiting_.pop_front();
      finish_request(r, FinishReason::kLength, capacity_detail(), now_s);
      retire(r);
      continue;
    }
    r.seq.num_computed_tokens = kv_.allocate(r.seq, n);
    if (r.first_scheduled_s < 0) {
      r.first_scheduled_s = now_s;
      r.num_prefix_hit_tokens = r.seq.num_computed_tokens;
    }
    r.status = RequestStatus::kRunning;
    waiting_.pop_front();
    running_.push_back(&r);
    out.add(r, kv_.block_table(r.id()), r.seq.num_computed_tokens, n);
    fork_if_prefilled(r, out);
    budget -= n;
  }
}

SchedulerOutput Scheduler::schedule(double now_s) {
  if (step_in_flight_) {
    throw std::logic_error("Scheduler::schedule: the previous step was not update()d");
  }
  SchedulerOutput out;
  out.seqs.reserve(running_.size() + 8);
  int budget = config_.max_num_batched_tokens;
  schedule_running(out, budget, now_s);
  // After a preemption, admitting new work would only feed the next preemption (vLLM's
  // rule) — unless nothing at all could be scheduled.
  if (out.preempted_ids.empty() || out.empty()) {
    schedule_swapped(out, budget);
    if (swapped_.empty()) schedule_waiting(out, budget, now_s);
  }
  place_forks();
  step_in_flight_ = true;
  if (!out.empty()) {
    ++stats_.num_steps;
    stats_.num_scheduled_tokens += out.num_batched_tokens();
  }
  return out;
}

// ─── update ────────────────────────────────────────────────────────────────────────────────

std::vector<int64_t> Scheduler::update(const SchedulerOutput& output,
                                       const std::vector<int>& sampled, double now_s) {
  if (!step_in_flight_) throw std::logic_error("Scheduler::update: no step was scheduled");
  if (static_cast<int>(sampled.size()) != output.num_sampled()) {
    throw InvalidArgument("Scheduler::update: " + std::to_string(sampled.size()) +
                          " sampled tokens for a step that samples " +
                          std::to_string(output.num_sampled()));
  }
  // Check everything before changing anything, so a bad call leaves the step retryable.
  std::vector<Request*> requests;
  requests.reserve(output.seqs.size());
  for (const ScheduledSequence& s : output.seqs) {
    auto it = live_.find(s.seq_id);
    if (it == live_.end() || it->second.get() != s.request) {
      throw std::logic_error("Scheduler::update: request " + std::to_string(s.seq_id) +
                             " of the output is not running here");
    }
    requests.push_back(it->second.get());
  }
  std::vector<int> accepted(output.seqs.size(), 0);  // drafts kept, per sequence
  for (size_t i = 0, k = 0; i < output.seqs.size(); ++i) {
    const ScheduledSequence& s = output.seqs[i];
    if (s.num_draft_tokens > 0) {
      accepted[i] = accepted_drafts(s, sampled.data() + k);
    } else {
      for (int j = 0; j < s.num_sampled_tokens(); ++j) {
        if (sampled[k + std::size_t(j)] < 0) {
          throw InvalidArgument("Scheduler::update: sampled token " +
                                std::to_string(sampled[k + std::size_t(j)]) + " of request " +
                                std::to_string(s.seq_id) + " is negative");
        }
      }
    }
    k += std::size_t(s.num_sampled_tokens());
  }
  std::vector<int64_t> done;
  size_t k = 0;
  for (size_t i = 0; i < output.seqs.size(); ++i) {
    const ScheduledSequence& s = output.seqs[i];
    Request& r = *requests[i];
    const int* entries = sampled.data() + k;
    k += std::size_t(s.num_sampled_tokens());
    // KV stands for the run up to the last accepted draft.
    r.seq.num_computed_tokens = s.end_pos() - s.num_draft_tokens + accepted[i];
    if (s.num_draft_tokens > 0) {
      r.num_draft_tokens += s.num_draft_tokens;
      r.num_accepted_tokens += accepted[i];
      stats_.num_draft_tokens += s.num_draft_tokens;
      stats_.num_accepted_tokens += accepted[i];
      r.draft = {};
    }
    if (!s.sample) continue;
    // The accepted drafts and the token after them, each through the stop rules, as if they
    // had been sampled one step at a time.
    bool finished = false;
    for (int j = 0; j <= accepted[i] && !finished; ++j) {
      finished = append_token(r, entries[j], now_s, config_.max_model_len, detokenize_);
    }
    // Samples forked in this step: their first token, drawn from the same row.
    for (std::size_t f = 0; f < s.forks.size(); ++f) {
      Request& child = *live_.at(s.forks[f]->id());
      if (append_token(child, entries[1 + f], now_s, config_.max_model_len, detokenize_)) {
        done.push_back(child.id());
      }
    }
    if (finished) {
      done.push_back(r.id());  // its blocks are freed below, drafts or not
    } else if (s.num_draft_tokens > 0) {
      // The accepted drafts' slots stand (and their full blocks are cached now); the
      // rejected ones go back to the pool through the block manager.
      kv_.accept_drafts(r.seq, accepted[i]);
    }
  }
  // Unlink the finished from the running list (keeping its order), then hand them out.
  running_.erase(std::remove_if(running_.begin(), running_.end(),
                                [](const Request* r) { return r->finished(); }),
                 running_.end());
  for (int64_t id : done) retire(*live_.at(id));
  step_in_flight_ = false;
  for (int64_t id : std::exchange(cancel_pending_, {})) {
    if (cancel(id, now_s)) done.push_back(id);
  }
  return done;
}

}  // namespace nanoserve::engine
