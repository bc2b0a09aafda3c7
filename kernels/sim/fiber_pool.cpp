// Worker fibers on guarded, staggered stacks; symmetric switches with ASan annotations.
//
// We use Boost.Context's fcontext primitives (make_fcontext / jump_fcontext) rather than
// boost::context::fiber because every jump, including the very first one into a new stack, must
// be annotated for ASan; fiber's constructor jumps into the new stack unannotated. Unwinding a
// suspended CUDA thread is done the way Boost's forced_unwind does it — by resuming the fiber and
// throwing from its suspension point (see block_scheduler.cpp) — so it stays annotated too.
#include "kernels/sim/fiber_pool.h"

#include <sys/mman.h>
#include <unistd.h>

#include <boost/context/detail/fcontext.hpp>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

#include "kernels/sim/sanitizer.h"

namespace nanoserve::sim {
namespace {

namespace bctx = boost::context::detail;

// Stack tops that are all congruent modulo 64 KiB compete for the same cache sets: staggering
// the tops by multiples of 256 B cut a 1024x1024 GEMV from ~37 to ~29 ms in the prototype.
// The stagger is added to the mapping, never taken from the usable stack.
constexpr std::size_t kStaggerStep = 256;
constexpr std::size_t kStaggerSpan = 64 * 1024;

std::size_t page_size() {
  static const std::size_t size = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return size;
}

// Bookkeeping after a context was resumed: `transfer` names the context that switched to us;
// store its handle so that it can be resumed later. ASan reports the stack we left, which is how
// the OS thread's own ("main") stack bounds are learnt on the first switch away from it.
void arrived(bctx::transfer_t transfer, const void* old_bottom, std::size_t old_size) {
  auto* resumer = static_cast<FiberContext*>(transfer.data);
  resumer->handle = transfer.fctx;
  if (resumer->stack_bottom == nullptr) {
    resumer->stack_bottom = old_bottom;
    resumer->stack_size = old_size;
  }
}

// The worker about to run for the first time; set by switch_to just before the jump.
thread_local Worker* tl_starting_worker = nullptr;

[[noreturn]] void worker_entry(bctx::transfer_t transfer) {
  const void* old_bottom = nullptr;
  std::size_t old_size = 0;
#if NANOSERVE_SIM_ASAN
  __sanitizer_finish_switch_fiber(nullptr, &old_bottom, &old_size);
#endif
  Worker& self = *tl_starting_worker;
  tl_starting_worker = nullptr;
  arrived(transfer, old_bottom, old_size);

  self.pool->run_body(self);

  // The pool is shutting down: go back to main for good; this stack is never resumed.
  FiberContext& main = self.pool->main_context();
#if NANOSERVE_SIM_ASAN
  __sanitizer_start_switch_fiber(nullptr, main.stack_bottom, main.stack_size);
#endif
  void* target = main.handle;
  main.handle = nullptr;
  bctx::jump_fcontext(target, &self.context);
  std::abort();  // unreachable: nothing resumes a finished worker
}

}  // namespace

std::size_t default_stack_bytes() {
  std::size_t kib = NANOSERVE_SIM_ASAN ? 256 : 64;
  if (const char* env = std::getenv("NANOSERVE_SIM_STACK_KIB")) {
    char* end = nullptr;
    const unsigned long value = std::strtoul(env, &end, 10);
    if (end != env && *end == '\0' && value >= 16 && value <= 65536) kib = value;
  }
  return kib * 1024;
}

FiberPool::FiberPool(WorkerMain body, void* user, std::size_t stack_bytes)
    : body_(body), user_(user), stack_bytes_(stack_bytes) {}

FiberPool::~FiberPool() {
  shutting_down_ = true;
  // Each idle worker is suspended inside its body; resuming it lets the body return, after
  // which the worker jumps back here one last time. Busy workers (only possible if the process
  // exits in the middle of a launch) are simply dropped with their stacks.
  while (!idle_.empty()) {
    Worker* worker = idle_.back();
    idle_.pop_back();
    switch_to(main_, worker->context);
  }
  for (auto& worker : workers_) munmap(worker->mapping, worker->mapping_bytes);
}

Worker& FiberPool::take_idle() {
  if (!idle_.empty()) {
    Worker* worker = idle_.back();
    idle_.pop_back();
    return *worker;
  }
  auto worker = std::make_unique<Worker>();
  worker->pool = this;
  worker->index = static_cast<int>(workers_.size());
  const std::size_t guard = page_size();
  const std::size_t usable = (stack_bytes_ + page_size() - 1) / page_size() * page_size();
  worker->mapping_bytes = guard + usable + kStaggerSpan;
  void* mapping = mmap(nullptr, worker->mapping_bytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (mapping == MAP_FAILED) {
    throw std::runtime_error("CUDA simulator: cannot map a " +
                             std::to_string(worker->mapping_bytes) +
                             "-byte fiber stack: " + std::strerror(errno));
  }
  worker->mapping = mapping;
  // The lowest page is the guard: a stack overflow is a clean SIGSEGV, not silent corruption.
  mprotect(mapping, guard, PROT_NONE);
  auto* bottom = static_cast<char*>(mapping) + guard;
  const std::size_t stagger =
      (static_cast<std::size_t>(worker->index) * kStaggerStep) % kStaggerSpan;
  char* top = bottom + usable + stagger;
  worker->context.stack_bottom = bottom;
  worker->context.stack_size = usable + stagger;
  worker->context.handle = bctx::make_fcontext(top, usable + stagger, &worker_entry);
  worker->context.unstarted = worker.get();
  workers_.push_back(std::move(worker));
  return *workers_.back();
}

void FiberPool::switch_to(FiberContext& from, FiberContext& to) {
  if (to.unstarted != nullptr) {
    tl_starting_worker = to.unstarted;
    to.unstarted = nullptr;
  }
#if NANOSERVE_SIM_ASAN
  void* fake_stack = nullptr;
  __sanitizer_start_switch_fiber(&fake_stack, to.stack_bottom, to.stack_size);
#endif
  void* target = to.handle;
  to.handle = nullptr;
  const bctx::transfer_t transfer = bctx::jump_fcontext(target, &from);
  const void* old_bottom = nullptr;
  std::size_t old_size = 0;
#if NANOSERVE_SIM_ASAN
  __sanitizer_finish_switch_fiber(fake_stack, &old_bottom, &old_size);
#endif
  arrived(transfer, old_bottom, old_size);
}

}  // namespace nanoserve::sim
