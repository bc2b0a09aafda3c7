#include "common/engine/model/step_counters.h"

#include <cstdio>

namespace nanoserve::engine {

std::string describe(const StepCounters& c) {
  char line[256];
  const double per_pass = c.passes > 0 ? double(c.uploads) / double(c.passes) : 0.0;
  int n = std::snprintf(line, sizeof line, "%lld passes, %lld uploads (%.3g per pass); ",
                        c.passes, c.uploads, per_pass);
  if (c.graph_replays + c.graph_captures == 0) {
    std::snprintf(line + n, sizeof line - std::size_t(n), "all launched kernel by kernel");
  } else {
    n += std::snprintf(line + n, sizeof line - std::size_t(n),
                       "%lld replayed from %lld CUDA graph%s (%lld padding rows", c.graph_replays,
                       c.graph_captures, c.graph_captures == 1 ? "" : "s", c.padding_rows);
    if (c.graph_updates > 0) {
      n += std::snprintf(line + n, sizeof line - std::size_t(n), ", %lld re-captured",
                         c.graph_updates);
    }
    std::snprintf(line + n, sizeof line - std::size_t(n), "), %lld launched kernel by kernel",
                  c.eager_passes);
  }
  return line;
}

nlohmann::json to_json(const StepCounters& c) {
  return {{"passes", c.passes},
          {"eager_passes", c.eager_passes},
          {"graph_replays", c.graph_replays},
          {"graph_captures", c.graph_captures},
          {"graph_updates", c.graph_updates},
          {"padding_rows", c.padding_rows},
          {"uploads", c.uploads}};
}

}  // namespace nanoserve::engine
