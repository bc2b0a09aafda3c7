#pragma once
/// \file
/// \brief What chapters 3 and 4 check before a serving run and report after it (shared, like
/// workload_flags.h): a workload the wall clock would wait for in real time for hours is
/// refused, and requests the batching policy rejected are counted and explained, never left
/// out of the output silently.
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/engine/serve/request.h"
#include "common/engine/serve/serving_loop.h"
#include "common/harness/clocks.h"
#include "common/error.h"

namespace nanoserve::harness {

/// \brief Longest the wall clock may wait for the last arrival (one hour): `--clock cpu`
/// (virtual time that skips idle gaps) runs any workload without waiting.
inline constexpr double kMaxWallClockWaitSeconds = 3600;

/// \brief Throws `InvalidArgument` when `clock` is the wall clock and the last request arrives
/// after `kMaxWallClockWaitSeconds` (a tiny `--rate`, or a trace spanning days).
inline void check_wall_clock_wait(const std::vector<engine::Request>& requests, ClockKind clock) {
  if (clock != ClockKind::kWall || requests.empty()) return;
  double last = 0;
  for (const engine::Request& r : requests) last = r.arrival_s > last ? r.arrival_s : last;
  if (last > kMaxWallClockWaitSeconds) {
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "the last request arrives at %.6g s: --clock wall would wait that long in real "
                  "time (limit %.0f s); use --clock cpu, which skips idle time, or a higher --rate",
                  last, kMaxWallClockWaitSeconds);
    throw InvalidArgument(buf);
  }
}

/// \brief "CONFIG: rejected K of N requests (first: request ID, REASON)" when `run` rejected
/// any (else ""), for the caller to print under its table; lists every rejected request in
/// `record` ("rejections": [{"id", "reason"}]). Throws `InvalidArgument` with that line when
/// every request was rejected and `refuse_all` (a single run measures nothing then; a sweep
/// point may legitimately reject everything).
inline std::string rejection_line(const std::string& config, const engine::ServingRun& run,
                                  nlohmann::json* record, bool refuse_all = true) {
  nlohmann::json list = nlohmann::json::array();
  const engine::Request* first = nullptr;
  for (const engine::Request& r : run.requests) {
    if (r.finish_reason != engine::FinishReason::kRejected) continue;
    if (first == nullptr) first = &r;
    if (record != nullptr) list.push_back({{"id", r.id()}, {"reason", r.finish_detail}});
  }
  if (first == nullptr) return {};
  std::size_t rejected = 0;
  for (const engine::Request& r : run.requests) rejected += r.finish_reason == engine::FinishReason::kRejected;
  const std::string line = config + ": rejected " + std::to_string(rejected) + " of " +
                           std::to_string(run.requests.size()) + " requests (first: request " +
                           std::to_string(first->id()) + ", " + first->finish_detail + ")";
  if (refuse_all && rejected == run.requests.size()) throw InvalidArgument(line);
  if (record != nullptr) (*record)["rejections"] = list;
  return line;
}

/// \brief Prints each non-empty line of `lines`, indented, under a table.
inline void print_rejections(const std::vector<std::string>& lines) {
  for (const std::string& l : lines) {
    if (!l.empty()) std::printf("  %s\n", l.c_str());
  }
}

}  // namespace nanoserve::harness
