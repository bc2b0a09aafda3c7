// __syncthreads and friends: release when every live thread waits at the same call site.
#include <cstring>
#include <stdexcept>

#include "kernels/sim/block_scheduler.h"
#include "kernels/sim/racecheck.h"

namespace nanoserve::sim {
namespace {

bool same_site(Site a, Site b) {
  // The same file may come with different string addresses from different translation units.
  return a.line == b.line && (a.file == b.file || std::strcmp(a.file, b.file) == 0);
}

}  // namespace

const char* barrier_name(BarrierKind kind) {
  switch (kind) {
    case BarrierKind::kSync: return "__syncthreads";
    case BarrierKind::kCount: return "__syncthreads_count";
    case BarrierKind::kAnd: return "__syncthreads_and";
    case BarrierKind::kOr: return "__syncthreads_or";
  }
  return "?";
}

BarrierResult BlockScheduler::barrier(BarrierKind kind, int predicate, Site site) {
  SimThread& thread = *current_;
  if (aborting_) return {0, 0};  // only reachable from destructors during an unwind
  if (barrier_waiters_.empty()) {
    barrier_site_ = site;
    barrier_count_ = 0;
  } else if (!same_site(site, barrier_site_)) {
    const SimThread& first = *barrier_waiters_.front();
    fail_and_leave("threads wait at different barriers: thread " + format_index(first.idx) +
                   " waits at " + barrier_name(first.barrier_kind) + " (" +
                   format_site(barrier_site_) + ") but thread " + format_index(thread.idx) +
                   " reached " + barrier_name(kind) + " (" + format_site(site) +
                   "); a barrier must not sit in divergent code");
  }
  thread.wait = WaitKind::kBarrier;
  thread.barrier_kind = kind;
  thread.site = site;
  barrier_waiters_.push_back(&thread);
  barrier_count_ += predicate != 0 ? 1 : 0;
  if (barrier_waiters_.size() == live_) {
    release_barrier();
  } else {
    wait_current(thread);
  }
  return thread.barrier_result;
}

void BlockScheduler::release_barrier() {
  race_barrier();  // a no-op unless the race checker runs this block
  const BarrierResult result{barrier_count_, static_cast<int>(barrier_waiters_.size())};
  for (SimThread* waiter : barrier_waiters_) {
    waiter->barrier_result = result;
    waiter->wait = WaitKind::kNone;
    if (waiter != current_) make_runnable(*waiter);
  }
  barrier_waiters_.clear();
}

BarrierResult block_barrier(BarrierKind kind, int predicate, Site site) {
  BlockScheduler* scheduler = BlockScheduler::active();
  if (scheduler == nullptr) {
    throw std::logic_error(std::string(barrier_name(kind)) + " called outside a kernel at " +
                           format_site(site));
  }
  return scheduler->barrier(kind, predicate, site);
}

}  // namespace nanoserve::sim
