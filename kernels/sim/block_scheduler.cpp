// Runs one block's threads as fibers: start order, hand-off, exits, errors and unwinding.
// Barriers are in barrier.cpp, warp operations in warp_sync.cpp.
#include "kernels/sim/block_scheduler.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>

#include "kernels/sim/permutation.h"
#include "kernels/sim/racecheck.h"

namespace nanoserve::sim {
namespace {

thread_local BlockScheduler* tl_active = nullptr;

}  // namespace

std::string format_index(uint3 i) {
  return "(" + std::to_string(i.x) + "," + std::to_string(i.y) + "," + std::to_string(i.z) + ")";
}

std::string format_site(Site site) {
  if (site.file == nullptr) return "?";
  const char* slash = std::strrchr(site.file, '/');
  return std::string(slash ? slash + 1 : site.file) + ":" + std::to_string(site.line);
}

BlockScheduler& BlockScheduler::for_this_thread() {
  thread_local BlockScheduler scheduler;
  return scheduler;
}

BlockScheduler* BlockScheduler::active() { return tl_active; }

BlockScheduler::BlockScheduler()
    : pool_(&BlockScheduler::worker_main, this, default_stack_bytes()) {}

BlockScheduler::~BlockScheduler() = default;

void BlockScheduler::begin_launch(const LaunchSpec& spec) {
  spec_ = &spec;
  num_threads_ = spec.block.x * spec.block.y * spec.block.z;
  threads_.assign(num_threads_, SimThread{});
  for (unsigned i = 0; i < num_threads_; ++i) {
    SimThread& t = threads_[i];
    t.linear = i;
    t.idx = uint3{i % spec.block.x, (i / spec.block.x) % spec.block.y,
                  i / (spec.block.x * spec.block.y)};
  }
  start_order_.resize(num_threads_);
  runnable_.assign(num_threads_, nullptr);
  warps_.assign((num_threads_ + 31) / 32, WarpState{});
  barrier_waiters_.clear();
  barrier_waiters_.reserve(num_threads_);
  // Exactly smem_bytes (not rounded up), so that ASan flags the first byte past the end.
  dynamic_smem_.reset(new unsigned char[spec.smem_bytes]);
  tl_dynamic_smem = dynamic_smem_.get();
  blockDim = spec.block;
  gridDim = spec.grid;
}

void BlockScheduler::end_launch() {
  dynamic_smem_.reset();
  tl_dynamic_smem = nullptr;
  spec_ = nullptr;
}

bool BlockScheduler::run_block(uint3 block_idx, Order order, std::uint64_t seed) {
  block_idx_ = block_idx;
  blockIdx = block_idx;
  ++block_serial_;
  for (SimThread& t : threads_) {
    t.state = ThreadState::kUnstarted;
    t.wait = WaitKind::kNone;
    t.worker = nullptr;
  }
  for (std::size_t w = 0; w < warps_.size(); ++w) {
    const unsigned lanes = std::min<unsigned>(32, num_threads_ - static_cast<unsigned>(w) * 32);
    warps_[w].live = lanes == 32 ? 0xffffffffu : (1u << lanes) - 1;
    warps_[w].groups.clear();
  }
  const Permutation permutation(order, seed, num_threads_);
  for (unsigned i = 0; i < num_threads_; ++i) {
    start_order_[i] = static_cast<unsigned>(permutation(i));
  }
  next_start_ = 0;
  runnable_head_ = runnable_count_ = 0;
  barrier_waiters_.clear();
  live_ = num_threads_;
  aborting_ = false;
  error_.clear();
  // Fresh dynamic shared memory reads as NaN (0xFF bytes) until the kernel writes it.
  std::memset(dynamic_smem_.get(), 0xff, spec_->smem_bytes);

  Worker& first = pool_.take_idle();  // may throw (no memory for a stack): nothing started yet
  const bool racecheck = racecheck_enabled();
  if (racecheck) {
    race_block_begin(spec_->kernel, num_threads_, dynamic_smem_.get(), spec_->smem_bytes);
  }
  tl_active = this;
  pool_.switch_to(pool_.main_context(), first.context);
  // Back on the OS thread's stack: every thread exited, or the block failed.
  if (aborting_) unwind_all();
  if (racecheck) {  // every thread has finished: the block's first race, if any, fails it
    const std::string race = race_block_end();
    if (!race.empty()) fail(race);
  }
  current_ = nullptr;
  tl_active = nullptr;
  return !aborting_;
}

void BlockScheduler::worker_main(Worker& self, void* user) {
  auto& scheduler = *static_cast<BlockScheduler*>(user);
  while (!scheduler.pool_.shutting_down()) {
    scheduler.run_unstarted(self);
    scheduler.go_idle(self);
  }
}

void BlockScheduler::run_unstarted(Worker& self) {
  while (!aborting_ && next_start_ < num_threads_) {
    SimThread& thread = threads_[start_order_[next_start_++]];
    thread.worker = &self;
    thread.state = ThreadState::kRunning;
    make_current(thread);
    run_thread(thread);
    thread_exited(thread);
  }
}

void BlockScheduler::run_thread(SimThread& thread) {
  try {
    spec_->body(spec_->closure);
  } catch (const ForcedUnwind&) {
    // Unwound after another thread's error: nothing to report.
  } catch (const LaunchAbort&) {
    // The error was recorded where it was detected.
  } catch (const std::exception& e) {
    fail("thread " + format_index(thread.idx) + " threw an exception: " + e.what());
  } catch (...) {
    fail("thread " + format_index(thread.idx) + " threw a non-standard exception");
  }
}

void BlockScheduler::thread_exited(SimThread& thread) {
  thread.state = ThreadState::kExited;
  thread.wait = WaitKind::kNone;
  --live_;
  if (aborting_) return;
  // An exited thread holds up neither its warp's operations nor the block barrier.
  WarpState& warp = warps_[thread.linear / 32];
  warp.live &= ~(1u << (thread.linear % 32));
  complete_ready_groups(warp);
  if (!barrier_waiters_.empty() && barrier_waiters_.size() == live_) release_barrier();
}

void BlockScheduler::go_idle(Worker& self) {
  pool_.put_idle(self);
  pool_.switch_to(self.context, next_context());
  // Resumed by run_block (a new block), by unwind_all, or by the pool's shutdown.
}

void BlockScheduler::wait_current(SimThread& thread) {
  thread.state = ThreadState::kWaiting;
  pool_.switch_to(thread.worker->context, next_context());
  if (aborting_) throw ForcedUnwind{};
}

FiberContext& BlockScheduler::next_context() {
  if (aborting_) return pool_.main_context();
  if (runnable_count_ > 0) {
    SimThread& next = *runnable_[runnable_head_];
    if (++runnable_head_ == num_threads_) runnable_head_ = 0;  // no division on the hot path
    --runnable_count_;
    next.state = ThreadState::kRunning;
    make_current(next);
    return next.worker->context;
  }
  if (next_start_ < num_threads_) return pool_.take_idle().context;
  if (live_ > 0) fail(describe_deadlock());
  return pool_.main_context();
}

void BlockScheduler::make_current(SimThread& thread) {
  current_ = &thread;
  threadIdx = thread.idx;
}

void BlockScheduler::make_runnable(SimThread& thread) {
  thread.state = ThreadState::kRunnable;
  thread.wait = WaitKind::kNone;
  std::size_t tail = runnable_head_ + runnable_count_;
  if (tail >= num_threads_) tail -= num_threads_;
  runnable_[tail] = &thread;
  ++runnable_count_;
}

void BlockScheduler::unwind_all() {
  for (SimThread& thread : threads_) {
    if (thread.state != ThreadState::kWaiting && thread.state != ThreadState::kRunnable) continue;
    // The thread resumes inside wait_current, sees aborting_ and throws ForcedUnwind; its worker
    // then goes idle and switches back here.
    make_current(thread);
    pool_.switch_to(pool_.main_context(), thread.worker->context);
  }
}

void BlockScheduler::fail(const std::string& message) {
  if (aborting_) return;  // keep the first error: later ones are usually its consequences
  aborting_ = true;
  error_ = "block " + format_index(block_idx_) + ": " + message;
}

void BlockScheduler::fail_and_leave(const std::string& message) {
  fail(message);
  throw LaunchAbort{};
}

std::string BlockScheduler::describe_deadlock() const {
  std::string text = "deadlock: no thread can proceed;";
  if (!barrier_waiters_.empty()) {
    const SimThread& first = *barrier_waiters_.front();
    text += " " + std::to_string(barrier_waiters_.size()) + " thread(s) (e.g. " +
            format_index(first.idx) + ") wait at " + barrier_name(first.barrier_kind) + " (" +
            format_site(barrier_site_) + ") for " +
            std::to_string(live_ - barrier_waiters_.size()) +
            " live thread(s) that wait elsewhere;";
  }
  for (std::size_t w = 0; w < warps_.size(); ++w) {
    for (const WarpGroup& group : warps_[w].groups) {
      char masks[64];
      std::snprintf(masks, sizeof masks, "lanes 0x%08x", group.arrived);
      text += " warp " + std::to_string(w) + ": " + masks + " wait in " + warp_op_name(group.op) +
              " (" + format_site(group.site) + ") for ";
      std::snprintf(masks, sizeof masks, "lanes 0x%08x (mask 0x%08x);",
                    group.mask & warps_[w].live & ~group.arrived, group.mask);
      text += masks;
    }
  }
  return text;
}

}  // namespace nanoserve::sim
