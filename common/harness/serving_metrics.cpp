#include "common/harness/serving_metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/error.h"

namespace nanoserve::harness {

double percentile(std::vector<double> values, double p) {
  if (values.empty()) throw InvalidArgument("percentile: no values");
  if (!(p >= 0 && p <= 100)) {
    throw InvalidArgument("percentile: p = " + std::to_string(p) + " is outside [0, 100]");
  }
  std::sort(values.begin(), values.end());
  const double h = double(values.size() - 1) * p / 100.0;
  const size_t lo = static_cast<size_t>(std::floor(h));
  const size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (h - double(lo)) * (values[hi] - values[lo]);
}

LatencySummary summarize(const std::vector<double>& values) {
  LatencySummary s;
  if (values.empty()) return s;
  s.count = static_cast<int>(values.size());
  double sum = 0;
  for (double v : values) sum += v;
  s.mean = sum / double(values.size());
  s.p50 = percentile(values, 50);
  s.p90 = percentile(values, 90);
  s.p99 = percentile(values, 99);
  s.max = *std::max_element(values.begin(), values.end());
  return s;
}

RequestLatency request_latency(const engine::Request& r) {
  RequestLatency l;
  l.id = r.id();
  if (r.first_scheduled_s >= 0) l.queue_s = r.first_scheduled_s - r.arrival_s;
  const std::vector<double>& t = r.token_times_s;
  if (!t.empty()) l.ttft_s = t.front() - r.arrival_s;
  if (t.size() >= 2) l.tpot_s = (t.back() - t.front()) / double(t.size() - 1);
  for (size_t i = 1; i < t.size(); ++i) l.itl_s.push_back(t[i] - t[i - 1]);
  if (r.finish_reason == engine::FinishReason::kStop || r.finish_reason == engine::FinishReason::kLength) {
    l.e2e_s = r.finished_s - r.arrival_s;
  }
  return l;
}

ServingMetrics compute_metrics(const engine::ServingRun& run) {
  ServingMetrics m;
  m.num_requests = static_cast<int>(run.requests.size());
  std::vector<double> queue, ttft, tpot, itl, e2e;
  for (const engine::Request& r : run.requests) {
    m.num_completed += r.finish_reason == engine::FinishReason::kStop ||
                       r.finish_reason == engine::FinishReason::kLength;
    m.num_rejected += r.finish_reason == engine::FinishReason::kRejected;
    m.num_cancelled += r.finish_reason == engine::FinishReason::kCancelled;
    if (r.first_scheduled_s >= 0) m.input_tokens += r.prompt_len;
    m.output_tokens += r.num_output_tokens();
    const RequestLatency l = request_latency(r);
    if (l.queue_s >= 0) queue.push_back(l.queue_s);
    if (l.ttft_s >= 0) ttft.push_back(l.ttft_s);
    if (l.tpot_s >= 0) tpot.push_back(l.tpot_s);
    if (l.e2e_s >= 0) e2e.push_back(l.e2e_s);
    itl.insert(itl.end(), l.itl_s.begin(), l.itl_s.end());
  }
  m.duration_s = run.end_s - run.start_s;
  if (m.duration_s > 0) {
    m.input_tokens_per_s = double(m.input_tokens) / m.duration_s;
    m.output_tokens_per_s = double(m.output_tokens) / m.duration_s;
    m.requests_per_s = double(m.num_completed) / m.duration_s;
  }
  m.queue = summarize(queue);
  m.ttft = summarize(ttft);
  m.tpot = summarize(tpot);
  m.itl = summarize(itl);
  m.e2e = summarize(e2e);

  m.num_steps = static_cast<long long>(run.steps.size());
  long long rows = 0;
  double usage = 0;
  for (const engine::StepSample& s : run.steps) {
    rows += s.num_batched_tokens;
    m.kv_blocks_peak = std::max(m.kv_blocks_peak, s.kv_blocks_used);
    if (run.num_kv_blocks > 0) usage += double(s.kv_blocks_used) / run.num_kv_blocks;
  }
  if (m.num_steps > 0) {
    m.mean_batch_tokens = double(rows) / double(m.num_steps);
    m.kv_usage_mean = usage / double(m.num_steps);
  }
  m.num_preemptions = run.num_preemptions;
  m.prefix_queries = run.kv.queries;
  m.prefix_hits = run.kv.hits;
  m.prefix_hit_rate = run.kv.hit_rate();
  m.prefill_tokens_skipped = run.kv.prefill_tokens_skipped;
  m.kv_blocks = run.num_kv_blocks;
  m.waste = run.waste;
  return m;
}

namespace {

void put_latency(nlohmann::json& j, const std::string& name, const LatencySummary& s) {
  j[name + "_mean_s"] = s.mean;
  j[name + "_p50_s"] = s.p50;
  j[name + "_p90_s"] = s.p90;
  j[name + "_p99_s"] = s.p99;
  j[name + "_max_s"] = s.max;
}

}  // namespace

nlohmann::json metrics_record(const std::string& config, const ServingMetrics& m) {
  nlohmann::json j;
  j["config"] = config;
  j["requests"] = m.num_requests;
  j["completed"] = m.num_completed;
  j["rejected"] = m.num_rejected;
  j["cancelled"] = m.num_cancelled;
  j["input_tokens"] = m.input_tokens;
  j["output_tokens"] = m.output_tokens;
  j["duration_s"] = m.duration_s;
  j["input_tokens_per_s"] = m.input_tokens_per_s;
  j["output_tokens_per_s"] = m.output_tokens_per_s;
  j["requests_per_s"] = m.requests_per_s;
  put_latency(j, "queue", m.queue);
  put_latency(j, "ttft", m.ttft);
  put_latency(j, "tpot", m.tpot);
  put_latency(j, "itl", m.itl);
  put_latency(j, "e2e", m.e2e);
  j["steps"] = m.num_steps;
  j["mean_batch_tokens"] = m.mean_batch_tokens;
  j["preemptions"] = m.num_preemptions;
  j["prefix_queries"] = m.prefix_queries;
  j["prefix_hits"] = m.prefix_hits;
  j["prefix_hit_rate"] = m.prefix_hit_rate;
  j["prefill_tokens_skipped"] = m.prefill_tokens_skipped;
  j["kv_blocks"] = m.kv_blocks;
  j["kv_blocks_peak"] = m.kv_blocks_peak;
  j["kv_usage_mean"] = m.kv_usage_mean;
  j["useful_rows"] = m.waste.useful_rows;
  j["padding_rows"] = m.waste.padding_rows;
  j["idle_rows"] = m.waste.idle_rows;
  j["waste_fraction"] = m.waste.waste_fraction();
  return j;
}

nlohmann::json kv_timeline(const engine::ServingRun& run) {
  nlohmann::json points = nlohmann::json::array();
  for (const engine::StepSample& s : run.steps) {
    points.push_back({{"time_s", s.time_s - run.start_s},
                      {"kv_blocks_used", s.kv_blocks_used},
                      {"running", s.num_running},
                      {"waiting", s.num_waiting},
                      {"batched_tokens", s.num_batched_tokens},
                      {"wasted_rows", s.num_wasted_rows},
                      {"preempted", s.num_preempted}});
  }
  return points;
}

void print_metrics_table(const std::vector<std::pair<std::string, ServingMetrics>>& rows) {
  std::printf("  %-26s %4s %8s %8s | %8s %8s | %7s %7s %7s | %8s %8s %8s %8s | %5s %5s %6s\n",
              "config", "done", "in tok/s", "out tk/s", "TTFT p50", "TTFT p99", "TPOT",
              "TPOTp99", "ITL p99", "e2e mean", "e2e p50", "e2e p90", "e2e p99", "preem",
              "hits", "waste");
  for (const auto& [label, m] : rows) {
    std::printf(
        "  %-26s %4d %8.1f %8.1f | %8.0f %8.0f | %7.1f %7.1f %7.1f | %8.0f %8.0f %8.0f %8.0f | "
        "%5lld %5lld %5.1f%%\n",
        label.c_str(), m.num_completed, m.input_tokens_per_s, m.output_tokens_per_s,
        1e3 * m.ttft.p50, 1e3 * m.ttft.p99, 1e3 * m.tpot.mean, 1e3 * m.tpot.p99, 1e3 * m.itl.p99,
        1e3 * m.e2e.mean, 1e3 * m.e2e.p50, 1e3 * m.e2e.p90, 1e3 * m.e2e.p99, m.num_preemptions,
        m.prefix_hits, 100.0 * m.waste.waste_fraction());
  }
  std::printf("  (times in ms; TPOT = mean time per output token after the first; waste = "
              "padding + idle rows / all rows)\n");
}

}  // namespace nanoserve::harness
