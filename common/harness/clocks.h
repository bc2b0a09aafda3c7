#pragma once
/// \file
/// \brief The clocks experiments time things with — one definition of each:
///
///     process_cpu_seconds()  CPU time of this process. On the CUDA simulator the kernels are
///                            CPU work, so this measures them even when other jobs share the
///                            machine (wall time would count those jobs too).
///     wall_seconds()         the steady clock
///     step_seconds()         what a chapter times a step with: wall time on a GPU (kernels run
///                            asynchronously on the device), CPU time on the simulator
///
/// and the two clocks a serving run can be driven by (`ClockKind`):
///
///     wall  the steady clock: arrivals wait in real time, a pass costs what it took —
///           what a server sees, but on a shared machine other processes' load shows up
///     cpu   virtual time that jumps over idle gaps and advances, per forward pass, by the
///           process CPU time the pass really used — the same real execution, immune to
///           load from other processes (the simulator runs on one thread)

#include <string>
#include <vector>

#include "common/engine/serve/executor.h"
#include "common/engine/serve/serving_loop.h"

namespace nanoserve::harness {

/// \brief Seconds of CPU time this process has used (CLOCK_PROCESS_CPUTIME_ID).
double process_cpu_seconds();

/// \brief Seconds since an arbitrary fixed point (monotonic wall clock).
double wall_seconds();

/// \brief Seconds on the clock a chapter times its steps with: `wall_seconds()` in the cuda
/// build, `process_cpu_seconds()` on the simulator.
double step_seconds();

/// \brief "wall time" or "CPU time": the clock `step_seconds()` reads, for table captions.
const char* step_clock_name();

/// \brief Which clock a run uses (see the file comment).
enum class ClockKind {
  kWall,  ///< the steady clock
  kCpu,   ///< virtual time advanced by each pass's process CPU time
};
/// \brief Parses "wall" / "cpu"; throws `InvalidArgument` otherwise.
ClockKind parse_clock_kind(const std::string& text);

/// \brief An executor that advances a `SimulatedClock` by the process CPU time each `execute`
/// of the wrapped executor takes (the `cpu` clock).
class CpuTimedExecutor final : public engine::Executor {
 public:
  /// \brief Wraps `inner`; both must outlive this.
  CpuTimedExecutor(engine::Executor& inner, engine::SimulatedClock& clock) : inner_(inner), clock_(clock) {}
  /// \brief Runs the wrapped executor and advances the clock by its CPU time.
  std::vector<int> execute(const engine::SchedulerOutput& output) override;

 private:
  engine::Executor& inner_;
  engine::SimulatedClock& clock_;
};

/// \brief An executor and the clock of `kind` a run is timed by, to hand to `run_static` or
/// `run_continuous`: wall — the executor itself and a `WallClock` started now; cpu — the
/// executor wrapped in a `CpuTimedExecutor` that advances a `SimulatedClock`.
///
///     harness::TimedExecutor timed(kind, executor);
///     engine::run_continuous(requests, config, timed.executor(), timed.clock());
class TimedExecutor {
 public:
  /// \brief Wraps `inner` (which must outlive this) for a run on the clock `kind`.
  TimedExecutor(ClockKind kind, engine::Executor& inner)
      : kind_(kind), inner_(inner), cpu_timed_(inner, simulated_) {}
  TimedExecutor(const TimedExecutor&) = delete;
  TimedExecutor& operator=(const TimedExecutor&) = delete;
  /// \brief The executor to run: `inner` on the wall clock, its CPU-timed wrapper otherwise.
  engine::Executor& executor() {
    return kind_ == ClockKind::kCpu ? static_cast<engine::Executor&>(cpu_timed_) : inner_;
  }
  /// \brief The clock to run on.
  engine::Clock& clock() {
    return kind_ == ClockKind::kCpu ? static_cast<engine::Clock&>(simulated_) : wall_;
  }

 private:
  ClockKind kind_;
  engine::Executor& inner_;
  engine::SimulatedClock simulated_;
  engine::WallClock wall_;
  CpuTimedExecutor cpu_timed_;
};

}  // namespace nanoserve::harness
