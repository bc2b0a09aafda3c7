#include "apps/bench_serving/server_scrape.h"

#include <sstream>

namespace nanoserve::bench {

using nlohmann::json;

std::map<std::string, double> parse_prometheus(const std::string& text) {
  std::map<std::string, double> out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.rfind(' ');
    if (space == std::string::npos) continue;
    try {
      out[line.substr(0, space)] = std::stod(line.substr(space + 1));
    } catch (const std::exception&) {
      // +Inf and the like: not a number any overhead needs
    }
  }
  return out;
}

json server_overhead(const std::map<std::string, double>& before,
                     const std::map<std::string, double>& after) {
  auto delta = [&](const std::string& name) {
    auto a = after.find(name), b = before.find(name);
    return (a == after.end() ? 0.0 : a->second) - (b == before.end() ? 0.0 : b->second);
  };
  const double steps = delta("nanoserve:iteration_steps_total");
  const double step_s = delta("nanoserve:iteration_step_seconds_total");
  const double tokens = delta("nanoserve:generation_tokens_total");
  json per_token = json::object();
  double server_s = 0;
  for (const char* phase : {"request", "detokenize", "serialize", "write"}) {
    const double s = delta(std::string("nanoserve:server_seconds_total{phase=\"") + phase + "\"}");
    server_s += s;
    per_token[phase] = tokens > 0 ? 1e6 * s / tokens : 0.0;
  }
  per_token["total"] = tokens > 0 ? 1e6 * server_s / tokens : 0.0;
  const double process = delta("process_cpu_seconds_total");
  const double engine = delta("nanoserve:engine_thread_cpu_seconds_total");
  return {{"steps", steps},
          {"generated_tokens", tokens},
          {"tokens_per_step", steps > 0 ? tokens / steps : 0.0},
          {"step_ms", steps > 0 ? 1e3 * step_s / steps : 0.0},
          {"engine_thread_cpu_ms_per_step", steps > 0 ? 1e3 * engine / steps : 0.0},
          {"sse_events", delta("nanoserve:server_stream_events_total")},
          {"server_us_per_token", per_token},
          {"server_work_per_step_pct", step_s > 0 ? 100 * server_s / step_s : 0.0},
          {"cpu_s", {{"process", process}, {"engine_thread", engine}, {"other", process - engine}}},
          {"other_cpu_us_per_token", tokens > 0 ? 1e6 * (process - engine) / tokens : 0.0},
          {"other_cpu_vs_engine_pct", engine > 0 ? 100 * (process - engine) / engine : 0.0}};
}

}  // namespace nanoserve::bench
