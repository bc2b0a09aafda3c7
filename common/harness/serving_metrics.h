#pragma once
/// \file
/// \brief Serving metrics of a `ServingRun` (chapters 3 and 4): per-request latencies, run
/// throughput, latency percentiles, KV usage over time, preemptions, prefix hits and static
/// batching's waste — and their JSON records (common/report.h).
///
/// One request's timeline (times on the run's clock):
///
///     arrival      first scheduled     token 1    token 2   …   token n = finish
///        │── queueing ──│── prefill ──────│── itl ──│── … ──│
///        │◄──────────── TTFT ────────────►│◄── (n-1) · TPOT ─────►│
///        │◄────────────────────── end-to-end latency ────────────►│
///
///  - TTFT: first token time − arrival (requests with at least one token).
///  - ITL (inter-token latency): every gap between consecutive tokens of a request, pooled
///    over all requests. TPOT (time per output token): per request, (last − first token
///    time) / (n − 1), for n >= 2 — the mean of that request's ITLs.
///  - End-to-end: finish − arrival, for requests that completed (stop or length).
///  - Throughput: generated tokens (all requests, cancelled ones included) and prompt tokens
///    (of requests that were scheduled) divided by the run's duration, from its start to the
///    last finish.
///  - Percentiles interpolate linearly between the two closest ranks: for sorted x₀ … xₙ₋₁,
///    h = (n − 1)·p/100 and P = x⌊h⌋ + (h − ⌊h⌋)(x⌊h⌋+1 − x⌊h⌋) (Hyndman & Fan's type 7,
///    numpy's and Excel's PERCENTILE.INC default).

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/engine/serve/serving_loop.h"

namespace nanoserve::harness {

/// \brief The p-th percentile (0 <= p <= 100) of `values`, type 7 (see the file comment).
/// Throws `InvalidArgument` for an empty input or p outside [0, 100].
double percentile(std::vector<double> values, double p);

/// \brief Count, mean, P50, P90, P99 and max of a set of latencies (all 0 when empty).
struct LatencySummary {
  int count = 0;     ///< number of values
  double mean = 0;   ///< arithmetic mean
  double p50 = 0;    ///< median
  double p90 = 0;    ///< 90th percentile
  double p99 = 0;    ///< 99th percentile
  double max = 0;    ///< largest value
};

/// \brief Summarizes `values` (seconds).
LatencySummary summarize(const std::vector<double>& values);

/// \brief One request's latencies; a latency that does not apply is -1.
struct RequestLatency {
  int64_t id = 0;                 ///< the request
  double queue_s = -1;            ///< first scheduled − arrival
  double ttft_s = -1;             ///< first token − arrival
  double tpot_s = -1;             ///< (last − first token) / (n − 1), n >= 2
  double e2e_s = -1;              ///< finish − arrival (completed requests)
  std::vector<double> itl_s;      ///< (n − 1) gaps between consecutive tokens
};

/// \brief The latencies of one finished request.
RequestLatency request_latency(const engine::Request& r);

/// \brief The summary of a run.
struct ServingMetrics {
  int num_requests = 0;   ///< all requests of the workload
  int num_completed = 0;  ///< finished with stop or length
  int num_rejected = 0;   ///< rejected (never fit)
  int num_cancelled = 0;  ///< cancelled
  long long input_tokens = 0;   ///< prompt tokens of requests that were scheduled
  long long output_tokens = 0;  ///< generated tokens
  double duration_s = 0;        ///< run start to last finish
  double input_tokens_per_s = 0;   ///< input_tokens / duration
  double output_tokens_per_s = 0;  ///< output_tokens / duration
  double requests_per_s = 0;       ///< num_completed / duration
  LatencySummary queue;  ///< queueing delay before the first schedule
  LatencySummary ttft;   ///< time to first token
  LatencySummary tpot;   ///< time per output token (per request)
  LatencySummary itl;    ///< inter-token latency (all gaps)
  LatencySummary e2e;    ///< end-to-end latency
  long long num_steps = 0;            ///< forward passes
  double mean_batch_tokens = 0;       ///< useful rows per pass
  long long num_preemptions = 0;      ///< preemptions
  long long prefix_queries = 0;       ///< full prompt blocks looked up in the prefix cache
  long long prefix_hits = 0;          ///< of those, hits
  double prefix_hit_rate = 0;         ///< hits / queries
  long long prefill_tokens_skipped = 0;  ///< prompt tokens taken from the cache
  int kv_blocks = 0;                  ///< pool size
  int kv_blocks_peak = 0;             ///< most blocks in use during a pass
  double kv_usage_mean = 0;           ///< mean over passes of blocks in use / pool size
  engine::BatchWaste waste;                   ///< static batching's padding and idle rows
};

/// \brief Computes the metrics of `run` (see the file comment for each definition).
ServingMetrics compute_metrics(const engine::ServingRun& run);

/// \brief A flat JSON record of `m` (seconds as *_s, rates as *_per_s) under `config`, for
/// `make_report(...)["records"]`.
nlohmann::json metrics_record(const std::string& config, const ServingMetrics& m);

/// \brief KV usage over time: one {time_s, kv_blocks_used, running, waiting, batched_tokens,
/// wasted_rows, preempted} object per pass, for plots.
nlohmann::json kv_timeline(const engine::ServingRun& run);

/// \brief Prints one row per (label, metrics) pair: requests, throughput in and out, TTFT,
/// TPOT, ITL P99, end-to-end latency mean/P50/P90/P99, preemptions, prefix hits and wasted
/// rows. Times in ms.
void print_metrics_table(const std::vector<std::pair<std::string, ServingMetrics>>& rows);

}  // namespace nanoserve::harness
