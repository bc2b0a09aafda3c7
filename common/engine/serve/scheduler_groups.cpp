// Scheduler: parallel sampling (chapter 7, rule 6 of scheduler.h). A request with n > 1 is a
// group: its samples are forked from it copy-on-write when its prompt is done, then admitted,
// preempted and handed out together (vLLM v0's SequenceGroup).
//
//     admission   P (room for n seats)    prompt chunks …      last chunk: fork
//     running     [.. P ..]                                    [.. P C1 C2 ..]   together
//     KV          P: [p p p p][p p _ _]   C1, C2 share both blocks (ref_cnt 3); the partial
//                                         one is copied on each sample's first write
#include <algorithm>
#include <stdexcept>

#include "common/engine/serve/scheduler.h"
#include "common/error.h"

namespace nanoserve::engine {

std::vector<Request*> Scheduler::members_of(const Request& r) const {
  std::vector<Request*> out;
  auto g = groups_.find(r.group_id());
  if (g == groups_.end() || !g->second.forked) {
    out.push_back(live_.at(r.id()).get());
    return out;
  }
  const int64_t parent = r.group_id();
  for (int i = 0; i < g->second.n; ++i) {
    auto it = live_.find(i == 0 ? parent : parallel_sample_id(parent, i));
    if (it != live_.end()) out.push_back(it->second.get());
  }
  return out;
}

std::vector<Request*> Scheduler::running_members(const Request& r) const {
  std::vector<Request*> out;
  for (Request* m : members_of(r)) {
    if (m->status == RequestStatus::kRunning) out.push_back(m);
  }
  return out;
}

int Scheduler::num_seats() const {
  int seats = static_cast<int>(running_.size());
  for (const Request* r : running_) {
    auto g = groups_.find(r->id());
    if (g != groups_.end() && !g->second.forked) seats += g->second.n - 1;  // to be forked
  }
  for (const auto& fork : forked_) seats += static_cast<int>(fork.second.size());  // placed soon
  return seats;
}

void Scheduler::preempt_group(Request& r, SchedulerOutput& out) {
  if (swap_out_group(r, out)) return;  // the mode and the host pool allow a swap
  const std::vector<Request*> members = running_members(r);
  // The group is the back of running_ (samples stay together); preempt() pops the back, so
  // the samples go newest first and the request itself lands at the front of the queue.
  for (auto it = members.rbegin(); it != members.rend(); ++it) {
    if (running_.back() != *it) {
      throw std::logic_error("Scheduler::preempt_group: the samples of request " +
                             std::to_string(r.group_id()) + " are not the back of the running list");
    }
    preempt(**it, out);
  }
}

bool Scheduler::admit_group(Request& r, SchedulerOutput& out, int& budget, double now_s) {
  const std::vector<Request*> members = members_of(r);  // all waiting, at the queue's front
  const int count = static_cast<int>(members.size());
  if (num_seats() + count > config_.max_num_seqs || budget < count) return false;
  // Each sample gets at least one row, the first ones what the budget allows. (Their prompts
  // — prompt and outputs so far — are chunked even with chunked prefill off: together they
  // may never fit one step.)
  const auto chunk = [&](const Request& m, int i, int left) {
    const int rest = m.seq.num_tokens() - kv_.num_cached_tokens(m.seq);
    return std::min(rest, left - (count - 1 - i));
  };
  // Blocks for all first chunks on today's cache, as if the samples shared nothing: an upper
  // bound (a sample hits the prompt blocks the one before caches), checked before anything is
  // allocated — an allocation undone would leave cached blocks that no pass ever wrote.
  int need = 0;
  std::vector<int> rows;
  for (int i = 0, left = budget; i < count; ++i) {
    const Request& m = *members[std::size_t(i)];
    rows.push_back(chunk(m, i, left));
    need += kv_.num_blocks_to_allocate(m.seq, rows.back());
    left -= rows.back();
  }
  if (need > kv_.pool().num_free_blocks()) {
    if (!running_.empty()) return false;  // wait for blocks (FCFS: nobody overtakes it)
    // Alone with the whole pool and still too big: its last sample stops growing here.
    Request& last = *members.back();
    waiting_.erase(std::find(waiting_.begin(), waiting_.end(), &last));
    finish_request(last, FinishReason::kLength, capacity_detail(), now_s);
    retire(last);
    return true;  // try again with the others
  }
  for (int i = 0; i < count; ++i) {
    Request& m = *members[std::size_t(i)];
    const int n = std::min(chunk(m, i, budget), rows[std::size_t(i)]);  // within the bound
    m.seq.num_computed_tokens = kv_.allocate(m.seq, n);  // the next sample may hit its blocks
    m.status = RequestStatus::kRunning;
    waiting_.erase(std::find(waiting_.begin(), waiting_.end(), &m));
    running_.push_back(&m);
    out.add(m, kv_.block_table(m.id()), m.seq.num_computed_tokens, n);
    budget -= n;
  }
  return true;
}

void Scheduler::fork_if_prefilled(Request& r, SchedulerOutput& out) {
  auto g = groups_.find(r.id());
  if (g == groups_.end() || g->second.forked || !out.seqs.back().sample) return;
  if (out.seqs.back().end_pos() != r.prompt_len) {  // every path that schedules rows forks
    throw std::logic_error("Scheduler: request " + std::to_string(r.id()) +
                           " samples past its prompt without having forked its samples");
  }
  Group& group = g->second;
  group.forked = true;
  std::vector<Request*> samples;
  // BEGIN EXERCISE ch07.2 "Parallel sampling: fork the samples when the prompt is done" points=20 minutes=30
  // HINT: For i = 1 .. n-1: a copy of r with id parallel_sample_id(r.id(), i), seed + i,
  // HINT: parent_id and sample_index set, num_computed_tokens = the end of this pass's run (the
  // HINT: pass computes the prompt's last rows for every sample) and no preemptions yet.
  // HINT: kv_.fork gives it r's blocks (shared; the partial last one is copied on write). Add
  // HINT: it to out.seqs.back().forks (its first token comes from r's last row), to `samples`
  // HINT: and to live_ (which owns it).
  // STUB: throw Error("exercise ch07.2 not done: Scheduler::fork_if_prefilled");
  for (int i = 1; i < group.n; ++i) {
    auto child = std::make_unique<Request>(r);
    child->seq.seq_id = parallel_sample_id(r.id(), i);
    child->seq.sampling.seed = r.seq.sampling.seed + std::uint64_t(i);
    child->seq.num_computed_tokens = out.seqs.back().end_pos();  // this pass computes it
    child->parent_id = r.id();
    child->sample_index = i;
    child->num_preemptions = 0;
    kv_.fork(r.id(), child->id());  // every block shared; the partial one copied on write
    out.seqs.back().forks.push_back(child.get());
    samples.push_back(child.get());
    live_.emplace(child->id(), std::move(child));
  }
  // END EXERCISE
  group.live += group.n - 1;
  forked_.emplace_back(&r, std::move(samples));
}

void Scheduler::place_forks() {
  for (auto& [parent, samples] : forked_) {
    auto at = std::find(running_.begin(), running_.end(), parent) + 1;
    running_.insert(at, samples.begin(), samples.end());
  }
  forked_.clear();
}

}  // namespace nanoserve::engine
