#include "common/harness/clocks.h"

#include <time.h>

#include <chrono>

#include "common/error.h"
#include "kernels/cuda_compat.h"

namespace nanoserve::harness {

ClockKind parse_clock_kind(const std::string& text) {
  if (text == "wall") return ClockKind::kWall;
  if (text == "cpu") return ClockKind::kCpu;
  throw InvalidArgument("clock: '" + text + "' is not 'wall' or 'cpu'");
}

double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double step_seconds() { return NANOSERVE_REAL_CUDA ? wall_seconds() : process_cpu_seconds(); }

const char* step_clock_name() { return NANOSERVE_REAL_CUDA ? "wall time" : "CPU time"; }

std::vector<int> CpuTimedExecutor::execute(const engine::SchedulerOutput& output) {
  const double t0 = process_cpu_seconds();
  std::vector<int> tokens = inner_.execute(output);
  clock_.advance(process_cpu_seconds() - t0);
  return tokens;
}


}  // namespace nanoserve::harness
