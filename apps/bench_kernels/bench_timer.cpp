// BenchTimer: CUDA events around each launch, an L2 flush before each, the median of the reps.
#include "apps/bench_kernels/bench_timer.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

namespace nanoserve::bench {
namespace {

std::size_t l2_flush_bytes() {
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  return 2 * static_cast<std::size_t>(prop.l2CacheSize > 0 ? prop.l2CacheSize : 0);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

BenchTimer::BenchTimer() : flush_(l2_flush_bytes()) {
  CUDA_CHECK(cudaStreamCreate(&stream_));
  CUDA_CHECK(cudaEventCreate(&start_));
  CUDA_CHECK(cudaEventCreate(&stop_));
}

BenchTimer::~BenchTimer() {
  cudaEventDestroy(stop_);
  cudaEventDestroy(start_);
  cudaStreamDestroy(stream_);
}

void BenchTimer::flush_l2(int rep) {
  // A different byte each time, so no layer of the memory system can skip the writes.
  if (flush_.size() > 0) {
    CUDA_CHECK(cudaMemsetAsync(flush_.get(), rep & 0xFF, flush_.bytes(), stream_));
  }
}

Timing BenchTimer::time(const Launch& launch, const TimingOptions& options) {
  if (options.reps < 1 || options.warmup < 0) {
    throw std::invalid_argument("BenchTimer: reps = " + std::to_string(options.reps) +
                                " must be >= 1 and warmup = " + std::to_string(options.warmup) +
                                " >= 0");
  }
  for (int i = 0; i < options.warmup; ++i) launch(stream_);
  CUDA_CHECK(cudaStreamSynchronize(stream_));

  std::vector<double> ms;
  double total_ms = 0.0;
  for (int rep = 0; rep < options.reps; ++rep) {
    flush_l2(rep);
    CUDA_CHECK(cudaEventRecord(start_, stream_));
    launch(stream_);
    CUDA_CHECK(cudaEventRecord(stop_, stream_));
    CUDA_CHECK(cudaEventSynchronize(stop_));
    float elapsed = 0.0f;
    CUDA_CHECK(cudaEventElapsedTime(&elapsed, start_, stop_));
    ms.push_back(elapsed);
    total_ms += elapsed;
    // Slow versions (a naive GEMM on a big shape) stop early, but never below 3 repetitions.
    if (rep + 1 >= 3 && total_ms > 1e3 * options.max_seconds) break;
  }
  return {median(ms), *std::min_element(ms.begin(), ms.end()), static_cast<int>(ms.size())};
}

}  // namespace nanoserve::bench
