// Scheduler: swap preemption (chapter 7, rule 7 of scheduler.h; vLLM v0's swap path). A
// victim's blocks go to the host pool instead of being dropped, and come back before any new
// request is admitted:
//
//     step k     running [A B C]  C does not fit → swap out C: blocks_to_swap_out {b5→h0 …}
//     step k+1   no preemption → swap in C (blocks_to_swap_in {h0→b2 …}), its next row too
//                (its num_computed_tokens were kept: nothing is recomputed)
#include <algorithm>

#include "common/engine/serve/scheduler.h"
#include "common/error.h"

namespace nanoserve::engine {

const char* to_string(PreemptionMode mode) {
  switch (mode) {
    case PreemptionMode::kRecompute: return "recompute";
    case PreemptionMode::kSwap: return "swap";
    case PreemptionMode::kAuto: return "auto";
  }
  return "?";
}

PreemptionMode parse_preemption_mode(const std::string& text) {
  for (PreemptionMode m : {PreemptionMode::kRecompute, PreemptionMode::kSwap, PreemptionMode::kAuto}) {
    if (text == to_string(m)) return m;
  }
  throw InvalidArgument("preemption mode '" + text + "': expected recompute, swap or auto");
}

bool Scheduler::swap_out_group(Request& r, SchedulerOutput& out) {
  const std::vector<Request*> members = running_members(r);
  const bool swap = config_.preemption_mode == PreemptionMode::kSwap ||
                    (config_.preemption_mode == PreemptionMode::kAuto && members.size() > 1);
  if (!swap) return false;
  std::vector<int64_t> ids;
  for (const Request* m : members) ids.push_back(m->id());
  if (kv_.num_host_blocks_to_swap_out(ids) > kv_.host_pool().num_free_blocks()) return false;
  const std::vector<BlockSwap> copies = kv_.swap_out(ids);
  out.blocks_to_swap_out.insert(out.blocks_to_swap_out.end(), copies.begin(), copies.end());
  // The group is the back of running_; it joins the back of the swapped queue in sample order.
  running_.resize(running_.size() - members.size());
  for (Request* m : members) {
    m->draft = {};  // drafts follow the last token; the next ones come after the swap-in
    m->status = RequestStatus::kSwapped;
    ++m->num_preemptions;
    ++stats_.num_preemptions;
    ++stats_.num_swap_outs;
    swapped_.push_back(m);
    out.preempted_ids.push_back(m->id());
  }
  return true;
}

void Scheduler::schedule_swapped(SchedulerOutput& out, int& budget) {
  const int bs = config_.block_size;
  while (!swapped_.empty() && budget > 0) {
    const std::vector<Request*> members = members_of(*swapped_.front());
    const int count = static_cast<int>(members.size());
    if (num_seats() + count > config_.max_num_seqs) break;
    std::vector<int64_t> ids;
    std::vector<const Sequence*> seqs;
    int next_rows = 0;  // blocks for each sample's next row: a new block, or a copy (shared)
    for (const Request* m : members) {
      ids.push_back(m->id());
      seqs.push_back(&m->seq);
      const int t = m->seq.num_computed_tokens;
      next_rows += (t + bs) / bs - (t + bs - 1) / bs + (t % bs != 0 ? 1 : 0);
    }
    // Room to come back and go on; alone with the whole pool, coming back is enough (the
    // next step's rules stop a sample that cannot grow).
    const int need = kv_.num_blocks_to_swap_in(ids) + (running_.empty() ? 0 : next_rows);
    if (need > kv_.pool().num_free_blocks()) break;  // FCFS: the oldest comes back first
    const std::vector<BlockSwap> copies = kv_.swap_in(seqs);
    out.blocks_to_swap_in.insert(out.blocks_to_swap_in.end(), copies.begin(), copies.end());
    for (int i = 0; i < count; ++i) {
      Request& m = *members[std::size_t(i)];
      swapped_.erase(std::find(swapped_.begin(), swapped_.end(), &m));
      m.status = RequestStatus::kRunning;
      running_.push_back(&m);
      ++stats_.num_swap_ins;
      // Its next tokens in the same step, where the budget (a row left for each sample after
      // it) and the blocks allow.
      const int n = std::min(m.seq.num_tokens() - m.seq.num_computed_tokens,
                             budget - (count - 1 - i));
      if (n < 1 || !kv_.can_append(m.seq, n)) continue;
      const std::vector<BlockCopy> cow = kv_.append_slots(m.seq, n);
      out.block_copies.insert(out.block_copies.end(), cow.begin(), cow.end());
      out.add(m, kv_.block_table(m.id()), m.seq.num_computed_tokens, n);
      fork_if_prefilled(m, out);  // swapped out during its prompt: it forks when that is done
      budget -= n;
    }
  }
}

}  // namespace nanoserve::engine
