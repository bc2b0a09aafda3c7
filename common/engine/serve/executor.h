#pragma once
/// \file
/// \brief The two seams of a serving loop: an `Executor` that runs the forward pass a
/// `SchedulerOutput` describes and returns the sampled tokens, and a `Clock` that says what
/// time it is. Tests plug in the `FakeExecutor` and a `SimulatedClock` (scheduling becomes
/// exact and instant); the chapter programs plug in the model and the wall clock.
///
///     ┌───────────┐ SchedulerOutput ┌──────────┐ tokens  ┌───────────┐
///     │ Scheduler │ ───────────────►│ Executor │────────►│ Scheduler │ update(): stop rules,
///     │ schedule()│                 │ execute()│         │ update()  │ free finished blocks
///     └───────────┘                 └──────────┘         └───────────┘
///
/// Determinism rule for every executor: the token sampled for a request at position p
/// depends only on that request's own tokens and (seed, p) — never on which other requests
/// share the batch, how its prompt was chunked, or whether it was preempted (docs/design.md,
/// "Determinism").

#include <chrono>
#include <thread>
#include <vector>

#include "common/engine/serve/scheduler_output.h"
#include "common/sampling/logprobs.h"

namespace nanoserve::engine {

/// \brief Runs forward passes.
///
/// \par Example
/// \snippet tests/ch04/test_examples_serve.cpp Executor
class Executor {
 public:
  virtual ~Executor() = default;
  /// \brief Performs `output.block_copies`, writes the K/V of every row to its slot, and
  /// returns one sampled token per sequence with `sample` set, in `output.seqs` order (with
  /// drafts or forks: `num_sampled()` entries, scheduler_output.h). Called only with an output
  /// that schedules something or swaps blocks (chapter 7; an executor of a scheduler
  /// configured with a host pool performs `blocks_to_swap_out`, then `blocks_to_swap_in`,
  /// first). The output is all an executor reads of the step:
  /// block tables, slots and copies travel in it (an executor over real paged KV owns pools
  /// of the scheduler's block count and size from its construction).
  virtual std::vector<int> execute(const SchedulerOutput& output) = 0;
  /// \brief The log-probabilities of the last `execute`'s tokens, one entry per returned
  /// token: filled (`TokenLogprobs::token` >= 0) for sequences whose request asked
  /// (`Request::num_logprobs` >= 0), default-constructed for the others. An executor that
  /// computes none returns an empty vector (the default).
  virtual std::vector<TokenLogprobs> take_logprobs() { return {}; }
};

/// \brief Time in seconds, as the serving loop sees it.
///
/// \par Example
/// \snippet tests/ch04/test_examples_serve.cpp Clock
class Clock {
 public:
  virtual ~Clock() = default;
  /// \brief The current time.
  virtual double now() const = 0;
  /// \brief Idles until `t` (no-op when `t` is not in the future).
  virtual void wait_until(double t) = 0;
};

/// \brief Virtual time: moves only when told to, so runs are exact and instant.
///
/// \par Example
/// \snippet tests/ch04/test_examples_serve.cpp SimulatedClock
class SimulatedClock : public Clock {
 public:
  /// \brief Starts at `start_s`.
  explicit SimulatedClock(double start_s = 0) : now_(start_s) {}
  /// \brief The current virtual time.
  double now() const override { return now_; }
  /// \brief Jumps to `t` if it is later.
  void wait_until(double t) override { now_ = t > now_ ? t : now_; }
  /// \brief Moves time forward by `dt` seconds (an executor's cost model calls this).
  void advance(double dt) { now_ += dt; }

 private:
  double now_;
};

/// \brief Real time since construction (steady clock).
///
/// \par Example
/// \snippet tests/ch04/test_examples_serve.cpp WallClock
class WallClock : public Clock {
 public:
  WallClock() : start_(std::chrono::steady_clock::now()) {}
  /// \brief Seconds since construction.
  double now() const override {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  /// \brief Sleeps until `t` seconds after construction.
  void wait_until(double t) override {
    const double dt = t - now();
    if (dt > 0) std::this_thread::sleep_for(std::chrono::duration<double>(dt));
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

}  // namespace nanoserve::engine
