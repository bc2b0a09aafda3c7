#include "apps/nanoserve/server/server_metrics.h"

#include <sys/resource.h>

#include <cstdio>
#include <utility>

namespace nanoserve::server {

namespace {
std::string num(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", x);
  return buf;
}
void metric(std::string& out, const char* name, const char* type, const char* help, double v) {
  out += std::string("# HELP nanoserve:") + name + " " + help + "\n# TYPE nanoserve:" + name +
         " " + type + "\nnanoserve:" + name + " " + num(v) + "\n";
}
}  // namespace

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double x) {
  size_t i = 0;
  while (i < bounds_.size() && x > bounds_[i]) ++i;
  ++counts_[i];
  sum_ += x;
  ++count_;
}

void Histogram::write(std::string& out, const std::string& name, const std::string& help) const {
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " histogram\n";
  long long cumulative = 0;
  for (size_t i = 0; i < counts_.size(); ++i) {
    cumulative += counts_[i];
    const std::string le = i < bounds_.size() ? num(bounds_[i]) : "+Inf";
    out += name + "_bucket{le=\"" + le + "\"} " + std::to_string(cumulative) + "\n";
  }
  out += name + "_sum " + num(sum_) + "\n" + name + "_count " + std::to_string(count_) + "\n";
}

// Buckets as vLLM's (TTFT, TPOT/ITL, e2e latency).
ServerMetrics::ServerMetrics()
    : ttft_({0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0,
             7.5, 10.0, 20.0, 40.0, 80.0}),
      tpot_({0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0}),
      itl_({0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0}),
      e2e_({0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0}) {}

void ServerMetrics::observe_finished(const engine::Request& r) {
  std::lock_guard<std::mutex> lock(mu_);
  using engine::FinishReason;
  const char* reason = r.finish_reason == FinishReason::kStop     ? "stop"
                       : r.finish_reason == FinishReason::kLength ? "length"
                                                                  : "abort";
  ++finished_[reason];
  const std::vector<double>& t = r.token_times_s;
  if (!t.empty()) ttft_.observe(t.front() - r.arrival_s);
  if (t.size() >= 2) tpot_.observe((t.back() - t.front()) / double(t.size() - 1));
  for (size_t i = 1; i < t.size(); ++i) itl_.observe(t[i] - t[i - 1]);
  if (r.finished_s >= 0 && r.finish_reason != FinishReason::kRejected) {
    e2e_.observe(r.finished_s - r.arrival_s);
  }
}

void ServerMetrics::count_error(int status) {
  std::lock_guard<std::mutex> lock(mu_);
  ++errors_[status];
}

std::string ServerMetrics::prometheus(const engine::EngineSnapshot& s) const {
  std::string out;
  metric(out, "num_requests_running", "gauge", "Requests holding KV blocks.", s.num_running);
  metric(out, "num_requests_waiting", "gauge", "Requests waiting for admission.", s.num_waiting);
  metric(out, "kv_blocks_used", "gauge", "KV blocks with a reference.", s.kv.blocks_in_use);
  metric(out, "kv_blocks_total", "gauge", "KV blocks in the pool.", s.num_kv_blocks);
  metric(out, "kv_cache_usage_perc", "gauge", "Fraction of KV blocks in use (0-1).",
         s.num_kv_blocks ? double(s.kv.blocks_in_use) / s.num_kv_blocks : 0.0);
  metric(out, "prefix_cache_queries_total", "counter", "Prompt blocks looked up in the prefix cache.",
         double(s.kv.queries));
  metric(out, "prefix_cache_hits_total", "counter", "Prompt blocks found in the prefix cache.",
         double(s.kv.hits));
  metric(out, "num_preemptions_total", "counter", "Preemptions (recompute).",
         double(s.stats.num_preemptions));
  metric(out, "prompt_tokens_total", "counter", "Prompt tokens of submitted requests.",
         double(s.num_prompt_tokens));
  metric(out, "generation_tokens_total", "counter", "Tokens generated.",
         double(s.num_generated_tokens));
  metric(out, "iteration_step_seconds", "gauge", "Wall time of the last engine step.",
         s.step_ms / 1e3);
  metric(out, "iteration_batch_size", "gauge", "Sequences in the last engine step.", s.batch_size);
  metric(out, "iteration_steps_total", "counter", "Engine steps run.", double(s.step));
  metric(out, "iteration_step_seconds_total", "counter", "Wall time of all engine steps.",
         s.step_seconds_total);
  metric(out, "engine_thread_cpu_seconds_total", "counter", "CPU time of the engine thread.",
         s.engine_cpu_seconds);
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) == 0) {
    const double cpu = double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                       1e-6 * double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
    out += "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n"
           "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total " + num(cpu) + "\n";
  }
  out += "# HELP nanoserve:server_seconds_total Wall time HTTP threads spent working, by phase.\n"
         "# TYPE nanoserve:server_seconds_total counter\n";
  const char* phases[] = {"request", "detokenize", "serialize", "write"};
  for (size_t i = 0; i < phase_ns_.size(); ++i) {
    out += std::string("nanoserve:server_seconds_total{phase=\"") + phases[i] + "\"} " +
           num(1e-9 * double(phase_ns_[i].load(std::memory_order_relaxed))) + "\n";
  }
  metric(out, "server_stream_events_total", "counter", "SSE events written.",
         double(events_.load(std::memory_order_relaxed)));
  std::lock_guard<std::mutex> lock(mu_);
  out += "# HELP nanoserve:request_success_total Finished requests by reason.\n"
         "# TYPE nanoserve:request_success_total counter\n";
  for (const char* reason : {"stop", "length", "abort"}) {
    auto it = finished_.find(reason);
    out += std::string("nanoserve:request_success_total{finished_reason=\"") + reason + "\"} " +
           std::to_string(it == finished_.end() ? 0 : it->second) + "\n";
  }
  out += "# HELP nanoserve:request_errors_total Requests refused, by HTTP status.\n"
         "# TYPE nanoserve:request_errors_total counter\n";
  for (const auto& [code, n] : errors_) {
    out += "nanoserve:request_errors_total{code=\"" + std::to_string(code) + "\"} " +
           std::to_string(n) + "\n";
  }
  ttft_.write(out, "nanoserve:time_to_first_token_seconds", "Engine arrival to first token.");
  tpot_.write(out, "nanoserve:time_per_output_token_seconds", "Mean gap between a request's tokens.");
  itl_.write(out, "nanoserve:inter_token_latency_seconds", "Every gap between tokens.");
  e2e_.write(out, "nanoserve:e2e_request_latency_seconds", "Engine arrival to finish.");
  return out;
}

}  // namespace nanoserve::server
