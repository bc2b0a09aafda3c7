#pragma once
/// \file
/// \brief One load run of bench_serving (vLLM's benchmark_serving, in C++): requests are sent
/// at their arrival times (Poisson arrivals from the workload generator, or a trace) by a pool
/// of client threads, at most `max_concurrency` in flight; no request is sent after
/// `max_duration_s`, and one still running then is cut. Then the summary vLLM reports:
///
///  - request throughput = completed requests / duration (first send to last end);
///  - output tokens/s, total (prompt + output) tokens/s;
///  - TTFT (send → first text), TPOT ((e2e − TTFT) / (output tokens − 1)), ITL (every gap
///    between pieces of text, pooled), e2e latency: mean, P50, P90, P99 (type-7 percentiles);
///  - goodput = completed requests that met every SLO given (TTFT, TPOT, e2e, in ms) / duration
///    (Zhong et al., DistServe, OSDI 2024; vLLM's --goodput).

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/bench_serving/backend.h"

namespace nanoserve::bench {

/// \brief Bounds of a run.
struct LoadOptions {
  int max_concurrency = 0;      ///< most requests in flight (0: as many as arrive, <= 1024)
  double max_duration_s = 120;  ///< no request is sent after this; running ones are cut
};

/// \brief Everything the client saw.
struct LoadResult {
  std::vector<RequestOutcome> outcomes;  ///< one per request, in workload order
  double duration_s = 0;                 ///< first send to last end
};

/// \brief Runs `requests` (in arrival order) on `backend`.
LoadResult run_load(Backend& backend, const std::vector<BenchRequest>& requests,
                    const LoadOptions& options);

/// \brief SLOs for goodput, in ms, by metric ("ttft", "tpot", "e2el"); parsed from
/// "ttft:500" strings. Throws `InvalidArgument` naming `--goodput` for anything else.
std::map<std::string, double> parse_slos(const std::vector<std::string>& specs);

/// \brief The summary of `result` (see the file comment) as a JSON record: counts, throughput,
/// `{ttft,tpot,itl,e2el}_ms` objects with mean, p50, p90, p99 and max, goodput, the first
/// errors.
nlohmann::json summarize_load(const LoadResult& result, const std::map<std::string, double>& slos);

}  // namespace nanoserve::bench
