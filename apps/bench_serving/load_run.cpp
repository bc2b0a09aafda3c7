#include "apps/bench_serving/load_run.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "common/error.h"
#include "common/harness/serving_metrics.h"

namespace nanoserve::bench {

using nlohmann::json;

LoadResult run_load(Backend& backend, const std::vector<BenchRequest>& requests,
                    const LoadOptions& options) {
  LoadResult result;
  result.outcomes.resize(requests.size());
  const int n = static_cast<int>(requests.size());
  const int workers = std::max(1, std::min(n, options.max_concurrency > 0 ? options.max_concurrency
                                                                          : 1024));
  std::mutex mu;
  std::condition_variable cv;
  std::deque<int> due;  // requests whose arrival time has come, waiting for a free worker
  bool closed = false;
  const Clock::time_point start = Clock::now();
  const Clock::time_point deadline =
      start + std::chrono::duration_cast<Clock::duration>(
                  std::chrono::duration<double>(options.max_duration_s));
  std::vector<std::thread> pool;
  for (int w = 0; w < workers; ++w) {
    pool.emplace_back([&] {
      for (;;) {
        int i = -1;
        {
          std::unique_lock<std::mutex> lock(mu);
          cv.wait(lock, [&] { return closed || !due.empty(); });
          if (due.empty()) return;
          i = due.front();
          due.pop_front();
        }
        if (Clock::now() >= deadline) continue;  // never sent
        result.outcomes[size_t(i)] = backend.run(requests[size_t(i)], start, deadline);
      }
    });
  }
  // The dispatcher: each request becomes due at its arrival time.
  for (int i = 0; i < n; ++i) {
    const Clock::time_point at =
        start + std::chrono::duration_cast<Clock::duration>(
                    std::chrono::duration<double>(requests[size_t(i)].arrival_s));
    if (at >= deadline) break;
    std::this_thread::sleep_until(at);
    {
      std::lock_guard<std::mutex> lock(mu);
      due.push_back(i);
    }
    cv.notify_one();
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    closed = true;
  }
  cv.notify_all();
  for (std::thread& t : pool) t.join();
  double first = -1, last = 0;
  for (const RequestOutcome& o : result.outcomes) {
    if (!o.sent) continue;
    if (first < 0 || o.send_s < first) first = o.send_s;
    last = std::max(last, o.end_s);
  }
  result.duration_s = first < 0 ? 0 : last - first;
  return result;
}

std::map<std::string, double> parse_slos(const std::vector<std::string>& specs) {
  std::map<std::string, double> slos;
  for (const std::string& s : specs) {
    const size_t colon = s.find(':');
    const std::string key = s.substr(0, colon);
    double ms = -1;
    if (colon != std::string::npos) {
      try {
        size_t used = 0;
        ms = std::stod(s.substr(colon + 1), &used);
        if (used != s.size() - colon - 1) ms = -1;
      } catch (const std::exception&) {
        ms = -1;
      }
    }
    if ((key != "ttft" && key != "tpot" && key != "e2el") || !(ms > 0)) {
      throw InvalidArgument("--goodput '" + s + "' must be ttft:MS, tpot:MS or e2el:MS with MS > 0");
    }
    slos[key] = ms;
  }
  return slos;
}

namespace {

json summary_ms(const std::vector<double>& seconds) {
  const harness::LatencySummary s = harness::summarize(seconds);
  return {{"count", s.count}, {"mean", 1e3 * s.mean}, {"p50", 1e3 * s.p50},
          {"p90", 1e3 * s.p90}, {"p99", 1e3 * s.p99}, {"max", 1e3 * s.max}};
}

}  // namespace

json summarize_load(const LoadResult& result, const std::map<std::string, double>& slos) {
  int sent = 0, completed = 0, failed = 0, incomplete = 0, good = 0;
  long long input_tokens = 0, output_tokens = 0;
  std::vector<double> ttft, tpot, itl, e2el;
  json errors = json::array();
  for (const RequestOutcome& o : result.outcomes) {
    if (!o.sent) continue;
    ++sent;
    if (!o.ok) {
      (o.incomplete ? incomplete : failed) += 1;
      if (errors.size() < 3) errors.push_back(o.error);
      continue;
    }
    ++completed;
    input_tokens += o.prompt_tokens;
    output_tokens += o.output_tokens;
    const double e2e = o.end_s - o.send_s;
    e2el.push_back(e2e);
    double t1 = -1, t2 = -1;  // this request's TTFT and TPOT
    if (!o.chunk_s.empty()) {
      t1 = o.chunk_s.front() - o.send_s;
      ttft.push_back(t1);
      for (size_t k = 1; k < o.chunk_s.size(); ++k) itl.push_back(o.chunk_s[k] - o.chunk_s[k - 1]);
    }
    if (t1 >= 0 && o.output_tokens > 1) {
      t2 = (e2e - t1) / double(o.output_tokens - 1);
      tpot.push_back(t2);
    }
    bool meets = true;
    for (const auto& [key, ms] : slos) {
      const double v = key == "ttft" ? t1 : key == "tpot" ? t2 : e2e;
      if (v < 0 || 1e3 * v > ms) meets = false;
    }
    good += meets ? 1 : 0;
  }
  const double d = result.duration_s > 0 ? result.duration_s : 1;
  json slo = json::object();
  for (const auto& [key, ms] : slos) slo[key + "_ms"] = ms;
  return {{"num_requests", result.outcomes.size()},
          {"sent", sent},
          {"completed", completed},
          {"failed", failed},
          {"incomplete", incomplete},
          {"errors", errors},
          {"duration_s", result.duration_s},
          {"input_tokens", input_tokens},
          {"output_tokens", output_tokens},
          {"request_throughput", completed / d},
          {"output_throughput", double(output_tokens) / d},
          {"total_token_throughput", double(input_tokens + output_tokens) / d},
          {"ttft_ms", summary_ms(ttft)},
          {"tpot_ms", summary_ms(tpot)},
          {"itl_ms", summary_ms(itl)},
          {"e2el_ms", summary_ms(e2el)},
          {"slo", slo},
          {"goodput", slos.empty() ? json(nullptr) : json(good / d)}};
}

}  // namespace nanoserve::bench
