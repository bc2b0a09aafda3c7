// Simulator options: defaults from NANOSERVE_SIM_ORDER / NANOSERVE_SIM_THREADS, overridable.
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "kernels/sim/launch.h"

namespace nanoserve::sim {
namespace {

// Parses a whole decimal number; false on anything else.
bool parse_u64(const char* text, std::uint64_t* value) {
  if (*text < '0' || *text > '9') return false;
  char* end = nullptr;
  *value = std::strtoull(text, &end, 10);
  return *end == '\0';
}

}  // namespace

Options parse_options(const char* order, const char* threads) {
  Options result;
  if (order != nullptr && *order) {
    if (std::strcmp(order, "forward") == 0) {
      result.order = Order::kForward;
    } else if (std::strcmp(order, "reverse") == 0) {
      result.order = Order::kReverse;
    } else if (std::strcmp(order, "shuffle") == 0) {
      result.order = Order::kShuffle;
    } else if (std::strncmp(order, "shuffle:", 8) == 0 && parse_u64(order + 8, &result.seed)) {
      result.order = Order::kShuffle;
    } else {
      result.env_error = std::string("NANOSERVE_SIM_ORDER='") + order +
                         "': expected forward, reverse, shuffle or shuffle:<seed>";
    }
  }
  if (threads != nullptr && *threads) {
    std::uint64_t n = 0;
    if (parse_u64(threads, &n) && n >= 1 && n <= 1024) {
      result.os_threads = static_cast<int>(n);
    } else {
      result.env_error = std::string("NANOSERVE_SIM_THREADS='") + threads +
                         "': expected a number of OS threads in [1, 1024]";
    }
  }
  return result;
}

namespace {

struct OptionsState {
  std::mutex mutex;
  Options current =
      parse_options(std::getenv("NANOSERVE_SIM_ORDER"), std::getenv("NANOSERVE_SIM_THREADS"));
};

OptionsState& state() {
  static OptionsState s;
  return s;
}

}  // namespace

Options options() {
  OptionsState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.current;
}

void set_options(const Options& options) {
  OptionsState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.current = options;
}

}  // namespace nanoserve::sim
