// Fork-join OS threads for NANOSERVE_SIM_THREADS > 1.
#include "kernels/sim/thread_pool.h"

namespace nanoserve::sim {

ThreadPool& ThreadPool::instance() {
  static ThreadPool pool;
  return pool;
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& helper : helpers_) helper.join();
}

void ThreadPool::run(int n, const std::function<void(int)>& task) {
  std::lock_guard<std::mutex> run_lock(run_mutex_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    while (static_cast<int>(helpers_.size()) < n - 1) {
      const int index = static_cast<int>(helpers_.size()) + 1;
      helpers_.emplace_back([this, index] { helper_loop(index); });
    }
    task_ = &task;
    wanted_ = n - 1;
    pending_ = n - 1;
    ++generation_;
  }
  wake_.notify_all();
  task(0);
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [this] { return pending_ == 0; });
  task_ = nullptr;
}

void ThreadPool::helper_loop(int index) {
  std::uint64_t seen = 0;
  for (;;) {
    const std::function<void(int)>* task = nullptr;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      if (index > wanted_) continue;  // not needed for this launch
      task = task_;
    }
    (*task)(index);
    std::lock_guard<std::mutex> lock(mutex_);
    if (--pending_ == 0) done_.notify_one();
  }
}

}  // namespace nanoserve::sim
