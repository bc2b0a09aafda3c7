#include "common/format_bytes.h"

#include <cstdio>

namespace nanoserve {

std::string format_bytes(double bytes) {
  char buf[64];
  const double kib = 1024.0, mib = kib * 1024, gib = mib * 1024, tib = gib * 1024;
  if (bytes < kib) {
    std::snprintf(buf, sizeof buf, "%.0f B", bytes);
  } else if (bytes < mib) {
    std::snprintf(buf, sizeof buf, "%.4g KiB", bytes / kib);
  } else if (bytes < gib) {
    std::snprintf(buf, sizeof buf, "%.4g MiB", bytes / mib);
  } else if (bytes < tib) {
    std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / gib);
  } else {
    std::snprintf(buf, sizeof buf, "%.2f TiB", bytes / tib);
  }
  return buf;
}

}  // namespace nanoserve
