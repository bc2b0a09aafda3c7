// bench_serving: load `nanoserve serve` the way vLLM's benchmark_serving loads vLLM (chapter 8)
// — Poisson arrivals at each --request-rate (or a trace's arrival times), a bounded number of
// requests and a bounded duration, streamed completions over HTTP on loopback — and report
// request and token throughput, TTFT, TPOT, ITL and e2e latency (mean, P50, P90, P99) and
// goodput under SLOs; --json for scripts/plot_results.py. --backend engine runs the same
// requests on the same engine in this process: the baseline the server's cost is measured
// against (with --server-metrics, also from the server's own timers).
//
//   bench_serving --base-url http://127.0.0.1:8000 -m stories260K.bin --request-rate 1,2,4,inf
//                 --num-prompts 32 --prompt-len fixed:32 --output-len fixed:64 --ignore-eos
//   bench_serving --backend engine -m stories260K.bin …the same workload flags…
#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "apps/bench_serving/engine_backend.h"
#include "apps/bench_serving/http_backend.h"
#include "apps/bench_serving/load_run.h"
#include "apps/bench_serving/server_scrape.h"
#include "common/cli/cli_checks.h"
#include "common/cli/program.h"
#include "common/error.h"
#include "common/harness/workload_options.h"
#include "common/model_bundle.h"
#include "common/report.h"
#include "common/tokenizer/tokenizer.h"

namespace nanoserve::bench {
namespace {

using nlohmann::json;

struct Args {
  std::string backend = "http";
  std::string base_url = "http://127.0.0.1:8000";
  std::string served_model_name;
  std::vector<std::string> rates = {"inf"};
  harness::WorkloadOptions workload;
  bool ignore_eos = false;
  LoadOptions load;
  double request_timeout_s = 600;
  std::vector<std::string> goodput;
  bool server_metrics = false;
  std::string label;
  std::string json_path;
  EngineBackendOptions engine;
};

double parse_rate(const std::string& s) {
  if (s == "inf") return std::numeric_limits<double>::infinity();
  try {
    size_t used = 0;
    const double r = std::stod(s, &used);
    if (used == s.size() && r > 0 && std::isfinite(r)) return r;
  } catch (const std::exception&) {
  }
  throw InvalidArgument("--request-rate '" + s + "' must be a number > 0 or inf");
}

// The workload as token ids (BOS first for synthetic prompts), checked against the context.
std::vector<BenchRequest> make_workload(const Args& a, double rate, const Tokenizer& tok,
                                        int context) {
  harness::WorkloadOptions w = a.workload;
  w.rate = rate;
  std::vector<BenchRequest> out;
  for (const engine::Request& r : harness::build_workload(w, tok, tok.vocab_size())) {
    BenchRequest b;
    b.index = static_cast<int>(out.size());
    b.arrival_s = r.arrival_s;
    b.prompt = r.seq.token_ids;
    b.max_tokens = r.max_tokens;
    b.temperature = r.seq.sampling.temperature;
    b.seed = r.seq.sampling.seed;
    b.ignore_eos = a.ignore_eos;
    b.stop_token_ids = {tok.eos_id(), tok.bos_id()};  // what the server stops at (cmd_serve.cpp)
    if (static_cast<int>(b.prompt.size()) + b.max_tokens > context) {
      throw InvalidArgument("request " + std::to_string(b.index) + ": prompt " +
                            std::to_string(b.prompt.size()) + " + max_tokens " +
                            std::to_string(b.max_tokens) + " exceeds the context of " +
                            std::to_string(context) + " (--prompt-len, --output-len)");
    }
    out.push_back(std::move(b));
  }
  return out;
}

// The engine's own account of a run (its thread's work, the same quantities as the server's
// /metrics give for --server-metrics): steps, step time and CPU time per step, tokens per step.
json engine_record(const engine::EngineSnapshot& before, const engine::EngineSnapshot& after) {
  const double steps = double(after.step - before.step);
  const double tokens = double(after.num_generated_tokens - before.num_generated_tokens);
  const double cpu = after.engine_cpu_seconds - before.engine_cpu_seconds;
  const double wall = after.step_seconds_total - before.step_seconds_total;
  return {{"steps", steps},
          {"generated_tokens", tokens},
          {"tokens_per_step", steps > 0 ? tokens / steps : 0.0},
          {"step_ms", steps > 0 ? 1e3 * wall / steps : 0.0},
          {"engine_thread_cpu_ms_per_step", steps > 0 ? 1e3 * cpu / steps : 0.0}};
}

// The line of the table for one run.
void print_row(const std::string& rate, const json& s) {
  auto ms = [&](const char* k, const char* p) { return s[k][p].get<double>(); };
  std::printf("%6s %5d/%-5d %7.2f %9.1f %8.0f %8.0f %7.1f %7.1f %7.1f %7.1f %8.0f %8.0f %8s\n",
              rate.c_str(), s["completed"].get<int>(), s["sent"].get<int>(),
              s["request_throughput"].get<double>(), s["output_throughput"].get<double>(),
              ms("ttft_ms", "p50"), ms("ttft_ms", "p99"), ms("tpot_ms", "p50"),
              ms("tpot_ms", "p99"), ms("itl_ms", "p50"), ms("itl_ms", "p99"),
              ms("e2el_ms", "p50"), ms("e2el_ms", "p99"),
              s["goodput"].is_null() ? "-" : std::to_string(s["goodput"].get<double>()).substr(0, 6).c_str());
}

int run(Args a) {
  const auto slos = parse_slos(a.goodput);
  if (!a.workload.trace.empty() && !(a.rates.size() == 1 && a.rates[0] == "inf")) {
    throw InvalidArgument("--request-rate does not apply to --trace (its lines have arrival times)");
  }
  std::vector<double> rates;
  for (const std::string& r : a.rates) rates.push_back(parse_rate(r));
  const TokenizerBundle tok = load_model_tokenizer(a.engine.model);
  std::unique_ptr<Backend> backend;
  HttpBackend* http = nullptr;
  EngineBackend* eng = nullptr;
  std::string device, model_name;
  int context = 0;
  if (a.backend == "http") {
    auto h = std::make_unique<HttpBackend>(a.base_url, a.served_model_name, a.request_timeout_s);
    const json models = json::parse(h->get("/v1/models"));
    context = models["data"][0].value("max_model_len", 0);
    const auto info = parse_prometheus(h->get("/metrics"));
    for (const auto& [name, value] : info) {  // nanoserve:server_info{model="…",device="…"} 1
      const size_t at = name.find("device=\"");
      if (name.rfind("nanoserve:server_info", 0) == 0 && at != std::string::npos) {
        device = name.substr(at + 8, name.rfind('"') - at - 8);
      }
    }
    model_name = h->model();
    http = h.get();
    backend = std::move(h);
  } else {
    auto e = std::make_unique<EngineBackend>(a.engine);
    device = e->device();
    context = e->context();
    model_name = a.engine.model;
    eng = e.get();
    backend = std::move(e);
  }
  if (a.server_metrics && http == nullptr) {
    throw InvalidArgument("--server-metrics needs --backend http");
  }
  const bool sim = device.find("simulator") != std::string::npos;
  std::printf("bench_serving  backend %s (%s)  model %s  device %s\n", backend->name().c_str(),
              http ? a.base_url.c_str() : "in-process", model_name.c_str(), device.c_str());
  if (sim) std::printf("NOTE: CUDA simulator: CPU timings of the simulator, not GPU performance.\n");

  // One short request first (not counted): the first step of an engine pays for setup.
  {
    std::vector<BenchRequest> warm = make_workload(a, 1, *tok.tokenizer, context);
    warm.resize(1);
    warm[0].arrival_s = 0;
    warm[0].max_tokens = 2;
    const LoadResult w = run_load(*backend, warm, {1, a.request_timeout_s});
    if (!w.outcomes[0].ok) throw Error("the warm-up request failed: " + w.outcomes[0].error);
  }

  json report = make_report("bench_serving", sim ? "sim" : "cuda", device);
  report["model"] = model_name;
  report["label"] = a.label.empty() ? backend->name() : a.label;
  report["client_backend"] = backend->name();
  report["workload"] =
      !a.workload.trace.empty()
          ? harness::describe_workload(a.workload, size_t(a.workload.num_requests))
          : std::to_string(a.workload.num_requests) + " requests per rate, prompts " +
                a.workload.prompt_len + ", outputs " + a.workload.output_len +
                (a.workload.temperature == 0 ? ", greedy"
                                             : ", temperature " + std::to_string(a.workload.temperature)) +
                (a.ignore_eos ? ", ignore_eos" : "") +
                (a.load.max_concurrency > 0
                     ? ", at most " + std::to_string(a.load.max_concurrency) + " in flight"
                     : "");
  report["ignore_eos"] = a.ignore_eos;
  std::printf("workload: %s; each run at most %.0f s\n", report["workload"].get<std::string>().c_str(),
              a.load.max_duration_s);
  report["max_concurrency"] = a.load.max_concurrency;
  std::printf("\n%6s %11s %7s %9s %8s %8s %7s %7s %7s %7s %8s %8s %8s\n", "rate", "done/sent",
              "req/s", "out tok/s", "TTFT p50", "TTFT p99", "TPOT50", "TPOT99", "ITL p50",
              "ITL p99", "e2e p50", "e2e p99", "goodput");
  for (size_t k = 0; k < rates.size(); ++k) {
    const std::vector<BenchRequest> requests = make_workload(a, rates[k], *tok.tokenizer, context);
    std::map<std::string, double> before;
    if (a.server_metrics) before = parse_prometheus(http->get("/metrics"));
    engine::EngineSnapshot engine_before;
    if (eng != nullptr) engine_before = eng->snapshot();
    const LoadResult result = run_load(*backend, requests, a.load);
    json row = summarize_load(result, slos);
    row["table"] = "load";
    row["rate"] = std::isinf(rates[k]) ? -1.0 : rates[k];  // -1: all at once (inf)
    row["label"] = report["label"];
    row["client_backend"] = backend->name();
    const std::string rate_text = a.workload.trace.empty() ? a.rates[k] : "trace";
    print_row(rate_text, row);
    if (a.server_metrics) {
      row["server_overhead"] = server_overhead(before, parse_prometheus(http->get("/metrics")));
    }
    if (eng != nullptr) row["engine"] = engine_record(engine_before, eng->snapshot());
    if (row.contains("server_overhead")) {
      const json& o = row["server_overhead"];
      const json& t = o["server_us_per_token"];
      std::printf("       server: %.1f µs per streamed token (request %.1f, detokenize %.1f, "
                  "serialize %.1f, write %.1f) = %.2f%% of the step time (%.1f ms, %.1f tokens "
                  "per step); other threads' CPU %.1f%% of the engine thread's\n",
                  t["total"].get<double>(), t["request"].get<double>(),
                  t["detokenize"].get<double>(), t["serialize"].get<double>(),
                  t["write"].get<double>(), o["server_work_per_step_pct"].get<double>(),
                  o["step_ms"].get<double>(), o["tokens_per_step"].get<double>(),
                  o["other_cpu_vs_engine_pct"].get<double>());
    }
    if (!row["errors"].empty()) std::printf("       first error: %s\n", row["errors"][0].get<std::string>().c_str());
    report["records"].push_back(row);
  }
  if (!a.json_path.empty()) write_json(a.json_path, report);
  return 0;
}

}  // namespace
}  // namespace nanoserve::bench

int main(int argc, char** argv) {
  using nanoserve::bench::Args;
  Args a;
  a.engine.model = nanoserve::default_model_spec();
  a.workload.num_requests = 32;
  a.workload.prompt_len = "fixed:32";
  a.workload.output_len = "fixed:64";
  a.workload.seed = 0;
  CLI::App app{"bench_serving: vLLM-style load test of `nanoserve serve` (or of its engine in-process)"};
  app.add_option("--backend", a.backend, "http = a server at --base-url; engine = in this process")
      ->capture_default_str()->check(CLI::IsMember({"http", "engine"}));
  app.add_option("--base-url", a.base_url, "http: the server or nginx (loopback only)")
      ->capture_default_str();
  app.add_option("--model,-m", a.engine.model,
                 "the model served (its tokenizer makes the prompts); engine: the model to run")
      ->capture_default_str();
  app.add_option("--served-model-name", a.served_model_name,
                 "http: the model id to request (default: the server's first /v1/models)");
  app.add_option("--request-rate", a.rates, "Poisson arrivals per second, one run each (inf = all at once)")
      ->delimiter(',')->capture_default_str();
  app.add_option("--trace", a.workload.trace, "JSONL workload (data/traces/) instead of the generator")
      ->check(CLI::ExistingFile);
  app.add_option("--num-prompts,-n", a.workload.num_requests, "requests per run")
      ->capture_default_str()->check(CLI::Range(1, 10000));
  app.add_option("--prompt-len", a.workload.prompt_len,
                 "prompt tokens: fixed:N | uniform:LO:HI | lognormal:MEDIAN:SIGMA:LO:HI | chat")
      ->capture_default_str();
  app.add_option("--output-len", a.workload.output_len, "max_tokens, same forms")->capture_default_str();
  app.add_option("--seed,-s", a.workload.seed, "workload seed (arrivals, prompts, sampling)")
      ->capture_default_str()->check(nanoserve::cli::seed_range());
  app.add_option("--temperature,-t", a.workload.temperature, "sampling temperature (0 = greedy)")
      ->capture_default_str()->check(nanoserve::cli::number_in(0, 2));
  app.add_flag("--ignore-eos", a.ignore_eos, "every request runs to its max_tokens (vLLM's ignore_eos)");
  app.add_option("--max-concurrency", a.load.max_concurrency, "most requests in flight (0 = no bound)")
      ->capture_default_str()->check(CLI::Range(0, 1024));
  app.add_option("--max-duration", a.load.max_duration_s,
                 "seconds per run: nothing is sent after it, and what runs is cut")
      ->capture_default_str()->check(nanoserve::cli::number_in(0, 86400, true));
  app.add_option("--request-timeout", a.request_timeout_s, "http: read timeout of a request, s")
      ->capture_default_str()->check(nanoserve::cli::number_in(0, 86400, true));
  app.add_option("--goodput", a.goodput, "SLOs for goodput: ttft:MS tpot:MS e2el:MS");
  app.add_flag("--server-metrics", a.server_metrics,
               "http: read the server's /metrics around each run and report its cost per token "
               "(one replica only)");
  app.add_option("--label", a.label, "name of this setup in the JSON and plots (e.g. '1 replica')");
  app.add_option("--json", a.json_path, "write the results as JSON");
  auto* e = app.add_option_group("engine backend", "as `nanoserve serve`'s flags of the same names");
  e->add_option("--dtype", a.engine.dtype)->capture_default_str()
      ->check(CLI::IsMember({"fp32", "fp16", "bf16"}));
  e->add_option("--max-num-seqs", a.engine.max_num_seqs)->capture_default_str()
      ->check(CLI::Range(1, 4096));
  e->add_option("--max-num-batched-tokens", a.engine.max_num_batched_tokens)->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  e->add_option("--block-size", a.engine.block_size)->capture_default_str()->check(CLI::Range(1, 4096));
  e->add_option("--num-kv-blocks", a.engine.num_kv_blocks)->capture_default_str()
      ->check(CLI::Range(0, 1 << 24));
  return nanoserve::cli::run_program("bench_serving", app, argc, argv,
                                     [&] { return nanoserve::bench::run(a); });
}
