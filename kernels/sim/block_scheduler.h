#pragma once
/// \file
/// \brief Internal to the simulator: runs the threads of one block as fibers on one OS thread.
///
/// Scheduling (see notes/cuda-simulator.md): a worker fiber starts not-yet-started threads one
/// after another; when a thread must wait (barrier, warp operation) its worker hands off
/// directly to the next runnable thread — released threads first, then a fresh worker for the
/// next unstarted thread. A barrier is released by the last live thread to arrive (or by the
/// exit of a thread that was holding it up); a warp operation completes when its last
/// participating lane arrives. When nothing can run and threads still wait, the block is
/// deadlocked: the launch fails with a description.
///
/// On a launch error every suspended thread is resumed once more and unwound by an exception
/// thrown from its suspension point (the mechanism of Boost's `forced_unwind`), so destructors in
/// kernel code run and the workers return to the pool for the next launch.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/sim/fiber_pool.h"
#include "kernels/sim/launch.h"
#include "kernels/sim/sync_ops.h"
#include "kernels/sim/warp_ops.h"

namespace nanoserve::sim {

/// \brief Thrown at a suspension point to unwind a simulated thread after a launch error.
/// Deliberately not a std::exception, so kernel code catching std::exception lets it pass.
struct ForcedUnwind {};
/// \brief Thrown by the thread that detected (and recorded) a launch error to leave the kernel.
struct LaunchAbort {};

/// \brief What a launch runs; shared, read-only, by every OS thread of the launch.
struct LaunchSpec {
  KernelBody body = nullptr;      ///< runs the kernel for the current thread
  const void* closure = nullptr;  ///< the kernel pointer and its arguments
  dim3 grid;                      ///< grid dimensions
  dim3 block;                     ///< block dimensions
  std::size_t smem_bytes = 0;     ///< dynamic shared memory per block
  const void* kernel = nullptr;   ///< the kernel's address (names it in race reports)
};

/// \brief Life cycle of a simulated thread within one block.
enum class ThreadState : std::uint8_t { kUnstarted, kRunning, kWaiting, kRunnable, kExited };
/// \brief What a waiting thread waits for.
enum class WaitKind : std::uint8_t { kNone, kBarrier, kWarp };

/// \brief One simulated CUDA thread of the running block.
struct SimThread {
  uint3 idx{0, 0, 0};                             ///< threadIdx
  unsigned linear = 0;                            ///< x + y·bx + z·bx·by (lane = linear % 32)
  ThreadState state = ThreadState::kUnstarted;    ///< life cycle
  WaitKind wait = WaitKind::kNone;                ///< what it waits for, if waiting
  WarpOp warp_op = WarpOp::kSync;                 ///< pending warp operation
  BarrierKind barrier_kind = BarrierKind::kSync;  ///< pending barrier intrinsic
  Site site{nullptr, 0};                          ///< where it waits
  unsigned mask = 0;                              ///< mask of the pending warp operation
  int src_lane = 0;                    ///< shuffle source lane (own lane if out of range)
  std::uint64_t value = 0;             ///< warp operation input
  std::uint64_t result = 0;            ///< warp operation output
  BarrierResult barrier_result{0, 0};  ///< barrier output
  Worker* worker = nullptr;            ///< the fiber running it, once started
};

/// \brief Lanes of one warp that wait in the same warp operation.
struct WarpGroup {
  unsigned mask = 0;          ///< the mask every member passed
  unsigned arrived = 0;       ///< lanes already waiting
  WarpOp op = WarpOp::kSync;  ///< the intrinsic
  Site site{nullptr, 0};      ///< its call site
};

/// \brief Per-warp bookkeeping.
struct WarpState {
  unsigned live = 0;              ///< lanes that exist and have not exited
  std::vector<WarpGroup> groups;  ///< pending operations (disjoint masks)
};

/// \brief Runs blocks of a launch on the calling OS thread (one instance per OS thread).
class BlockScheduler {
 public:
  /// \brief The scheduler of the calling OS thread.
  static BlockScheduler& for_this_thread();
  /// \brief The scheduler whose block is running on this OS thread, or null outside kernels.
  static BlockScheduler* active();

  BlockScheduler();
  ~BlockScheduler();
  BlockScheduler(const BlockScheduler&) = delete;
  BlockScheduler& operator=(const BlockScheduler&) = delete;

  /// \brief Prepares for the blocks of `spec` (sizes thread tables, sets blockDim/gridDim).
  void begin_launch(const LaunchSpec& spec);
  /// \brief Releases the launch's per-block buffers.
  void end_launch();
  /// \brief Runs one block to completion; false on a launch error (then see error()).
  /// \param block_idx the block's blockIdx
  /// \param order,seed start order of the block's threads
  bool run_block(uint3 block_idx, Order order, std::uint64_t seed);
  /// \brief Description of the last failed block, prefixed with its index.
  const std::string& error() const { return error_; }
  /// \brief The simulated thread running now (only while a block runs).
  const SimThread& current() const { return *current_; }
  /// \brief Threads per block of the running launch.
  unsigned num_threads() const { return num_threads_; }
  /// \brief Changes at every run_block: lets per-block state kept elsewhere (async copies, race
  /// checking) notice a new block.
  std::uint64_t block_serial() const { return block_serial_; }
  /// \brief Bytes of dynamic shared memory of the running launch.
  std::size_t dynamic_smem_bytes() const { return spec_->smem_bytes; }
  /// \brief Fails the launch with `message` (prefixed with the block) from inside kernel code,
  /// and leaves the kernel: for checks that live outside the scheduler.
  [[noreturn]] void kernel_fault(const std::string& message) { fail_and_leave(message); }
  /// \brief Number of worker fibers this OS thread has created.
  std::size_t worker_count() const { return pool_.size(); }

  /// \brief `__syncthreads` and friends for the current thread.
  BarrierResult barrier(BarrierKind kind, int predicate, Site site);
  /// \brief Every warp intrinsic for the current thread.
  std::uint64_t warp_op(WarpOp op, unsigned mask, std::uint64_t value, int lane_arg, int width,
                        Site site);

 private:
  static void worker_main(Worker& self, void* user);
  void run_unstarted(Worker& self);
  void run_thread(SimThread& thread);
  void thread_exited(SimThread& thread);
  void go_idle(Worker& self);
  void wait_current(SimThread& thread);
  FiberContext& next_context();
  void make_current(SimThread& thread);
  void make_runnable(SimThread& thread);
  void release_barrier();
  void complete_group(WarpState& warp, std::size_t group);
  void complete_ready_groups(WarpState& warp);
  void unwind_all();
  void fail(const std::string& message);
  [[noreturn]] void fail_and_leave(const std::string& message);
  std::string describe_deadlock() const;

  FiberPool pool_;
  const LaunchSpec* spec_ = nullptr;
  unsigned num_threads_ = 0;
  std::vector<SimThread> threads_;     // by linear index
  std::vector<unsigned> start_order_;  // linear indices in start order
  std::size_t next_start_ = 0;
  std::vector<SimThread*> runnable_;  // FIFO ring of capacity num_threads_
  std::size_t runnable_head_ = 0;
  std::size_t runnable_count_ = 0;
  std::vector<WarpState> warps_;
  std::vector<SimThread*> barrier_waiters_;  // in arrival order
  Site barrier_site_{nullptr, 0};
  int barrier_count_ = 0;
  unsigned live_ = 0;
  SimThread* current_ = nullptr;
  bool aborting_ = false;
  std::uint64_t block_serial_ = 0;
  uint3 block_idx_{0, 0, 0};
  std::string error_;
  std::unique_ptr<unsigned char[]> dynamic_smem_;
};

/// \brief "(x,y,z)".
std::string format_index(uint3 index);
/// \brief "file:line" with the directories stripped.
std::string format_site(Site site);
/// \brief The source-level name of a warp intrinsic, e.g. "__shfl_xor_sync".
const char* warp_op_name(WarpOp op);
/// \brief The source-level name of a barrier intrinsic, e.g. "__syncthreads_count".
const char* barrier_name(BarrierKind kind);

}  // namespace nanoserve::sim
