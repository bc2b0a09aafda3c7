#pragma once
/// \file
/// \brief The server's own account of a run (bench_serving --server-metrics): /metrics read
/// before and after, and the difference turned into what the server costs beside the engine.
///
///     step_ms            = Δ iteration_step_seconds_total / Δ iteration_steps_total
///     server µs / token  = Δ server_seconds_total{phase} / Δ generation_tokens_total
///     work per step      = Δ Σ server_seconds_total / Δ iteration_step_seconds_total
///                          (the target: ≤ 5 % at 64 concurrent streams)
///     other CPU          = Δ process_cpu_seconds_total − Δ engine_thread_cpu_seconds_total
///                          (everything not on the engine thread: HTTP threads, their wake-ups
///                          and socket calls too, which the timer split does not see)
///
/// Only meaningful against one replica: behind nginx each scrape reaches some replica.

#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace nanoserve::bench {

/// \brief Sample name (labels included, e.g. `x{phase="write"}`) → value, from Prometheus text.
std::map<std::string, double> parse_prometheus(const std::string& text);

/// \brief The overhead record (see the file comment) from two scrapes.
nlohmann::json server_overhead(const std::map<std::string, double>& before,
                               const std::map<std::string, double>& after);

}  // namespace nanoserve::bench
