#pragma once
/// \file
/// \brief Internal to the simulator: the worker fibers of one OS thread and the context switches
/// between them (Boost.Context `fcontext`, ~8 ns per switch).
///
/// A simulated CUDA thread runs on a *worker* fiber. Workers are persistent: a worker runs
/// not-yet-started CUDA threads back to back and only needs a second worker when one of them
/// blocks (in `__syncthreads` or a warp operation) while holding its stack. A block of N threads
/// with barriers therefore uses N workers; a block without barriers uses one.
///
/// Every switch is symmetric (worker → worker, worker → main, main → worker) and, under ASan,
/// annotated with `__sanitizer_start_switch_fiber` / `__sanitizer_finish_switch_fiber` so that the
/// sanitizer always knows which stack is live. Boost is kept out of this header on purpose: kernel
/// translation units never see it (compile time, see notes/cuda-simulator.md).

#include <cstddef>
#include <memory>
#include <vector>

namespace nanoserve::sim {

struct Worker;

/// \brief An execution context: the OS thread's own stack ("main") or a worker fiber.
struct FiberContext {
  void* handle = nullptr;              ///< Boost `fcontext_t` while suspended, null while running
  const void* stack_bottom = nullptr;  ///< lowest usable stack address (for ASan annotations)
  std::size_t stack_size = 0;          ///< usable stack bytes (for ASan annotations)
  Worker* unstarted = nullptr;         ///< the worker whose fiber has never run yet, if any
};

class FiberPool;

/// \brief A persistent fiber with a guarded stack, owned by a FiberPool.
struct Worker {
  FiberContext context;           ///< where the worker is suspended
  FiberPool* pool = nullptr;      ///< owning pool
  int index = 0;                  ///< creation order (selects the stack stagger)
  void* mapping = nullptr;        ///< mmap'd region: guard page + stack + stagger
  std::size_t mapping_bytes = 0;  ///< size of `mapping`
};

/// \brief The loop every worker fiber runs; it returns only when the pool shuts down.
using WorkerMain = void (*)(Worker& self, void* user);

/// \brief The worker fibers of one OS thread.
///
/// Not thread-safe: a pool and its fibers belong to the OS thread that created it (fibers never
/// migrate, which is what makes OS-thread-local `threadIdx` correct).
class FiberPool {
 public:
  /// \brief Creates an empty pool.
  /// \param body,user each new worker runs `body(worker, user)`
  /// \param stack_bytes usable stack per worker (a guard page and a stagger are added).
  FiberPool(WorkerMain body, void* user, std::size_t stack_bytes);
  /// \brief Lets every (idle) worker return from its body, then unmaps the stacks.
  ~FiberPool();
  FiberPool(const FiberPool&) = delete;
  FiberPool& operator=(const FiberPool&) = delete;

  /// \brief The context of the OS thread's own stack.
  FiberContext& main_context() { return main_; }
  /// \brief An idle worker (the most recently idled one, its stack is warm), or a new one.
  Worker& take_idle();
  /// \brief Returns a worker to the idle list; call just before it switches away for good.
  void put_idle(Worker& worker) { idle_.push_back(&worker); }
  /// \brief Suspends the running context `from` and resumes `to`; returns when `from` is resumed.
  void switch_to(FiberContext& from, FiberContext& to);
  /// \brief True once the destructor has started: worker bodies must return.
  bool shutting_down() const { return shutting_down_; }
  /// \brief Number of workers created so far.
  std::size_t size() const { return workers_.size(); }
  /// \brief Usable stack bytes of each worker.
  std::size_t stack_bytes() const { return stack_bytes_; }
  /// \brief Runs the worker body; called once by each fiber's entry trampoline.
  void run_body(Worker& worker) { body_(worker, user_); }

 private:
  WorkerMain body_;
  void* user_;
  std::size_t stack_bytes_;
  bool shutting_down_ = false;
  FiberContext main_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<Worker*> idle_;
};

/// \brief Default usable stack per worker: 64 KiB (-O2 needs >= 8 KiB, ASan >= 32 KiB; notes),
/// 256 KiB under ASan; `NANOSERVE_SIM_STACK_KIB` overrides it.
std::size_t default_stack_bytes();

}  // namespace nanoserve::sim
