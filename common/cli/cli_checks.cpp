#include "common/cli/cli_checks.h"

#include <cmath>
#include <cstdlib>
#include <limits>

namespace nanoserve::cli {
namespace {

std::string show(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

CLI::Validator number_in(double lo, double hi, bool open_low) {
  const std::string range = (open_low ? "(" : "[") + show(lo) + ", " + show(hi) + "]";
  return CLI::Validator(
      [lo, hi, open_low, range](std::string& input) -> std::string {
        const char* begin = input.c_str();
        char* end = nullptr;
        const double v = std::strtod(begin, &end);
        const bool parsed = end != begin && *end == '\0';
        if (!parsed || std::isnan(v) || v < lo || v > hi || (open_low && v == lo)) {
          return "'" + input + "' is not a number in " + range;
        }
        return std::string();
      },
      "NUMBER in " + range);
}

CLI::Validator seed_range() {
  return CLI::Validator(
      [](std::string& input) -> std::string {
        static const std::string kMax = std::to_string(std::numeric_limits<uint64_t>::max());
        const bool digits = !input.empty() && input.size() <= kMax.size() &&
                            input.find_first_not_of("0123456789") == std::string::npos;
        if (!digits || (input.size() == kMax.size() && input > kMax)) {
          return "'" + input + "' is not a seed: a decimal integer in [0, 2^64 - 1 = " + kMax + "]";
        }
        return std::string();
      },
      "UINT64 in [0, 2^64 - 1]");
}

}  // namespace nanoserve::cli
