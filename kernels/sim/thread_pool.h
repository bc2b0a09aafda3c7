#pragma once
/// \file
/// \brief Internal to the simulator: persistent OS threads that run the blocks of a launch
/// concurrently when `NANOSERVE_SIM_THREADS` > 1. Each OS thread has its own fibers and its own
/// copy of static `__shared__` memory.

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace nanoserve::sim {

/// \brief A fork-join pool: `run(n, task)` calls `task(0..n-1)` on n OS threads (the caller is
/// number 0) and returns when all have finished.
class ThreadPool {
 public:
  /// \brief The process-wide pool (threads are created on first need).
  static ThreadPool& instance();
  ThreadPool() = default;
  /// \brief Stops and joins the helper threads.
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  /// \brief Runs `task(i)` for i in [0, n) concurrently; one launch at a time.
  void run(int n, const std::function<void(int)>& task);

 private:
  void helper_loop(int index);

  std::mutex run_mutex_;  // serializes launches from different host threads
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  std::vector<std::thread> helpers_;
  const std::function<void(int)>* task_ = nullptr;
  int wanted_ = 0;                // helpers taking part in the current generation
  int pending_ = 0;               // helpers still running it
  std::uint64_t generation_ = 0;  // bumped for each run
  bool stopping_ = false;
};

}  // namespace nanoserve::sim
