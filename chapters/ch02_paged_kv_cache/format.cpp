#include "chapters/ch02_paged_kv_cache/format.h"

#include <chrono>
#include <cstdio>
#include <ctime>

namespace nanoserve::ch02 {

double process_cpu_seconds() { return double(std::clock()) / CLOCKS_PER_SEC; }

double wall_seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

}  // namespace nanoserve::ch02
