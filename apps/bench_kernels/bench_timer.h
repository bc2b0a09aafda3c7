#pragma once
/// \file
/// \brief Timing of one benchmark case with CUDA events: warm-up launches, then repetitions
/// each preceded by an L2 flush, reporting the median (llm.c's and nvbench's practice).

#include <cstddef>

#include "apps/bench_kernels/bench_case.h"
#include "kernels/device_buffer.h"

namespace nanoserve::bench {

/// \brief How a case is timed.
struct TimingOptions {
  int warmup = 3;                 ///< untimed launches first (caches, clocks, lazy loading)
  int reps = 20;                  ///< timed repetitions (at most)
  double max_seconds = 2.0;       ///< fewer repetitions (>= 3) when one takes longer than this
};

/// \brief What timing a case found.
struct Timing {
  double median_ms = 0.0;  ///< median over the repetitions
  double min_ms = 0.0;     ///< fastest repetition
  int reps = 0;            ///< repetitions timed
};

/// \brief Times launches on its own stream, flushing L2 before every timed launch.
class BenchTimer {
 public:
  /// \brief Allocates the flush buffer: twice the device's L2 (`cudaDeviceProp::l2CacheSize`),
  /// so a timed kernel finds none of its inputs cached by the previous repetition. A device
  /// that reports no L2 (the simulator) gets no flush.
  BenchTimer();
  ~BenchTimer();
  BenchTimer(const BenchTimer&) = delete;
  BenchTimer& operator=(const BenchTimer&) = delete;

  /// \brief Bytes written between repetitions to evict L2 (0 = no flush).
  std::size_t flush_bytes() const { return flush_.bytes(); }

  /// \brief Runs `launch` `options.warmup` times, then times up to `options.reps` launches.
  Timing time(const Launch& launch, const TimingOptions& options);

 private:
  void flush_l2(int rep);

  DeviceBuffer<unsigned char> flush_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
};

}  // namespace nanoserve::bench
