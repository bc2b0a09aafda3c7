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
/// share the batch, how its prompt was chunked, or whether it was preempted (DESIGN.md).

#include <chrono>
#include <thread>
#include <vector>

#include "common/engine/serve/scheduler_output.h"

namespace nanoserve::engine {

class KVCacheManager;

/// \brief Runs forward passes.
class Executor {
 public:
  virtual ~Executor() = default;
  /// \brief Called by the serving loops (`run_continuous`, `run_static`) with the KV cache
  /// manager whose block tables this run's outputs refer to — before the first `execute` —
  /// and with nullptr when the run ends. An executor over real paged KV sizes its device
  /// pools from it; one that keeps its own KV (the fake) ignores it.
  virtual void attach_kv(const KVCacheManager* kv) { (void)kv; }
  /// \brief Performs `output.block_copies`, writes the K/V of every row to its slot, and
  /// returns one sampled token per sequence with `sample` set, in `output.seqs` order.
  /// Called only with a non-empty output.
  virtual std::vector<int> execute(const SchedulerOutput& output) = 0;
};

/// \brief Attaches a KV manager to an executor for one run and detaches it on every exit
/// (an exception included), so the executor never keeps a manager that no longer exists.
class ScopedKVAttachment {
 public:
  /// \brief `executor.attach_kv(&kv)`.
  ScopedKVAttachment(Executor& executor, const KVCacheManager& kv) : executor_(executor) {
    executor_.attach_kv(&kv);
  }
  /// \brief `executor.attach_kv(nullptr)`.
  ~ScopedKVAttachment() { executor_.attach_kv(nullptr); }
  ScopedKVAttachment(const ScopedKVAttachment&) = delete;
  ScopedKVAttachment& operator=(const ScopedKVAttachment&) = delete;

 private:
  Executor& executor_;
};

/// \brief Time in seconds, as the serving loop sees it.
class Clock {
 public:
  virtual ~Clock() = default;
  /// \brief The current time.
  virtual double now() const = 0;
  /// \brief Idles until `t` (no-op when `t` is not in the future).
  virtual void wait_until(double t) = 0;
};

/// \brief Virtual time: moves only when told to, so runs are exact and instant.
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
