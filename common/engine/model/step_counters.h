#pragma once
/// \file
/// \brief `StepCounters`: what a runner's steps did — passes launched kernel by kernel or
/// replayed from CUDA graphs, graphs captured, padding rows, uploads — for tests, the chapter
/// programs' output and their JSON.

#include <nlohmann/json.hpp>

#include <string>

namespace nanoserve::engine {

/// \brief What a runner's steps did.
///
/// \par Example
/// \snippet tests/ch01/test_decode_graphs.cpp StepCounters
struct StepCounters {
  long long passes = 0;          ///< forward passes
  long long eager_passes = 0;    ///< passes launched kernel by kernel
  long long graph_replays = 0;   ///< passes replayed from a captured graph
  long long graph_captures = 0;  ///< graphs captured (the first pass of each bucket used)
  long long graph_updates = 0;   ///< graphs captured again because an address they bake in moved
  long long padding_rows = 0;    ///< rows added to fill graph buckets
  long long uploads = 0;         ///< host-to-device copies of step metadata (one per pass)
};

/// \brief One line for a program's output, e.g. "40 passes, 40 uploads (1 per pass); 31
/// replayed from 3 CUDA graphs (12 padding rows), 9 launched kernel by kernel".
std::string describe(const StepCounters& c);

/// \brief The counters as a JSON object with the field names above.
nlohmann::json to_json(const StepCounters& c);

}  // namespace nanoserve::engine
