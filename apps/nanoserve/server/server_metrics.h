#pragma once
/// \file
/// \brief `/metrics`: the server's state in Prometheus text format, with vLLM's metric names
/// under the `nanoserve:` prefix (vLLM uses `vllm:`), so dashboards made for one read the other:
///
///     nanoserve:num_requests_running / _waiting          gauges, from the engine snapshot
///     nanoserve:kv_cache_usage_perc, kv_blocks_used       gauges (fraction, blocks)
///     nanoserve:prefix_cache_queries_total / _hits_total  counters (blocks)
///     nanoserve:num_preemptions_total                     counter
///     nanoserve:prompt_tokens_total, generation_tokens_total
///     nanoserve:request_success_total{finished_reason}    counter: stop, length, abort
///     nanoserve:request_errors_total{code}                 counter: refused requests by status
///     nanoserve:time_to_first_token_seconds                histogram (engine arrival → token 1)
///     nanoserve:time_per_output_token_seconds              histogram (per request, mean gap)
///     nanoserve:inter_token_latency_seconds                histogram (every gap)
///     nanoserve:e2e_request_latency_seconds                histogram (arrival → finish)
///     nanoserve:iteration_step_seconds                     gauge: the last engine step
///
/// and what the server itself costs beside the engine (chapter 8's overhead measurement; not
/// vLLM metrics):
///
///     nanoserve:iteration_steps_total                      counter: engine steps run
///     nanoserve:iteration_step_seconds_total               counter: wall time of all steps
///     nanoserve:engine_thread_cpu_seconds_total            counter: CPU time of the engine thread
///     process_cpu_seconds_total                            counter: CPU time of the process
///     nanoserve:server_seconds_total{phase}                counter: wall time the HTTP threads
///         spent working (not waiting): request (parse, template, tokenize, submit),
///         detokenize (tokens to safe text: TextStream, logprob texts), serialize (chunk JSON
///         and SSE framing), write (handing the bytes to the socket)
///     nanoserve:server_stream_events_total                 counter: SSE events written

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "common/engine/serve/async_engine.h"
#include "common/engine/serve/request.h"

namespace nanoserve::server {

/// \brief A Prometheus histogram (cumulative buckets, sum, count).
class Histogram {
 public:
  /// \brief Upper bounds of the buckets, ascending (+Inf is added).
  explicit Histogram(std::vector<double> bounds);
  /// \brief Counts one value.
  void observe(double x);
  /// \brief The `_bucket`, `_sum` and `_count` lines of `name` with its HELP and TYPE.
  void write(std::string& out, const std::string& name, const std::string& help) const;
  /// \brief Values counted.
  long long count() const { return count_; }

 private:
  std::vector<double> bounds_;
  std::vector<long long> counts_;  // per bucket, not cumulative
  double sum_ = 0;
  long long count_ = 0;
};

/// \brief Where an HTTP thread's working time goes (see the file comment).
enum class ServerPhase { kRequest, kDetokenize, kSerialize, kWrite };

/// \brief Everything `/metrics` shows that the engine snapshot does not: latency histograms
/// of finished requests and counters of outcomes. Thread-safe.
class ServerMetrics {
 public:
  ServerMetrics();
  /// \brief A finished request (called on the engine thread, `AsyncEngine::set_finished_hook`).
  void observe_finished(const engine::Request& r);
  /// \brief A refused HTTP request (4xx/5xx answered by the server).
  void count_error(int status);
  /// \brief Adds `seconds` of an HTTP thread's work to `phase` (lock-free: called per chunk).
  void add_time(ServerPhase phase, double seconds) {
    phase_ns_[static_cast<size_t>(phase)].fetch_add(static_cast<uint64_t>(seconds * 1e9),
                                                    std::memory_order_relaxed);
  }
  /// \brief Counts `n` SSE events written.
  void count_events(uint64_t n) { events_.fetch_add(n, std::memory_order_relaxed); }
  /// \brief The whole exposition: these metrics and the gauges of `snapshot`.
  std::string prometheus(const engine::EngineSnapshot& snapshot) const;

 private:
  std::array<std::atomic<uint64_t>, 4> phase_ns_{};  // by ServerPhase
  std::atomic<uint64_t> events_{0};
  mutable std::mutex mu_;
  Histogram ttft_, tpot_, itl_, e2e_;
  std::map<std::string, long long> finished_;  // by finished_reason
  std::map<int, long long> errors_;            // by HTTP status
};

}  // namespace nanoserve::server
