#include "chapters/ch02_paged_kv_cache/format.h"

#include <chrono>
#include <cstdio>
#include <ctime>

namespace nanoserve::ch02 {

std::string format_bytes(std::int64_t bytes) {
  char buf[64];
  const double b = static_cast<double>(bytes);
  if (bytes < 1024) {
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(bytes));
  } else if (bytes < (1LL << 20)) {
    std::snprintf(buf, sizeof buf, "%.4g KiB", b / 1024.0);
  } else if (bytes < (1LL << 30)) {
    std::snprintf(buf, sizeof buf, "%.4g MiB", b / (1 << 20));
  } else {
    std::snprintf(buf, sizeof buf, "%.2f GiB", b / (1 << 30));
  }
  return buf;
}

double process_cpu_seconds() { return double(std::clock()) / CLOCKS_PER_SEC; }

double wall_seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

}  // namespace nanoserve::ch02
