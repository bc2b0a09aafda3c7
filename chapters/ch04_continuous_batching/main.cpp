// Chapter 4: continuous batching — schedule every iteration, not every batch.
//
//   ch04_continuous_batching --num-requests 16 --rate 4 --compare-static 8
//   ch04_continuous_batching --trace data/traces/chat_poisson.jsonl --num-blocks 24
//   ch04_continuous_batching sweep-rate --rates 1,2,4,inf
//   ch04_continuous_batching sched-bench --num-seqs 64,256,512
//
// Runs a workload through the iteration-level scheduler (chunked prefill, preemption by
// recompute, prefix caching) on the model — kernels over paged KV — and reports throughput,
// TTFT, TPOT/ITL, end-to-end latency percentiles, KV usage over time, preemptions and prefix
// hits; optionally the same workload under static batching next to it. The sweeps produce the
// tutorial's plots. README.md is the tutorial that walks through this file.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "chapters/ch04_continuous_batching/serving_runs.h"
#include "common/harness/workload_flags.h"
#include "common/harness/serving_metrics.h"
#include "common/engine/model/device_info.h"
#include "common/harness/scheduler_bench.h"
#include "common/harness/serving_checks.h"
#include "common/cli/cli_checks.h"
#include "common/cli/cost_device.h"
#include "common/cli/program.h"
#include "common/error.h"
#include "common/model_bundle.h"
#include "common/report.h"

namespace nanoserve::ch04 {
namespace {

struct Args {
  std::string model = default_model_spec();
  harness::WorkloadOptions workload;
  engine::SchedulerConfig scheduler;
  bool no_chunked_prefill = false;
  bool budget_given = false;  // --max-num-batched-tokens was on the command line
  bool no_prefix_caching = false;
  std::string dtype = nanoserve::engine::default_dtype();  // bf16 on a GPU build, fp32 in the simulator
  std::string kv_dtype;        // empty: --dtype
  int compare_static = 0;
  std::string clock = "wall";
  std::string executor = "model";
  std::string cost_device;  // --cost-device: the roofline model of every pass on that GPU
  bool no_cuda_graphs = false;  // --no-cuda-graphs: every step launched kernel by kernel
  bool tour = false;
  std::string json;
  std::vector<std::string> rates = {"1", "2", "4", "8", "inf"};  // sweep-rate
  std::vector<int> budgets = {16, 64};                          // sweep-chunked
  std::vector<int> pool_blocks = {64, 32, 16, 12};              // sweep-pool
  std::vector<int> bench_seqs = {64, 256, 512};                 // sched-bench
};

// Every request's TTFT and end-to-end latency, for the tutorial's CDF plot.
nlohmann::json latency_record(const std::string& config, const engine::ServingRun& run) {
  nlohmann::json ttft = nlohmann::json::array(), e2e = nlohmann::json::array();
  for (const engine::Request& r : run.requests) {
    const harness::RequestLatency l = harness::request_latency(r);
    if (l.ttft_s >= 0) ttft.push_back(l.ttft_s);
    if (l.e2e_s >= 0) e2e.push_back(l.e2e_s);
  }
  return {{"table", "latency_cdf"}, {"config", config}, {"ttft_s", ttft}, {"e2e_s", e2e}};
}

void print_kv_timeline(const engine::ServingRun& run, int every_n_lines) {
  if (run.steps.empty()) return;
  std::printf("\n== KV usage over time (%d blocks) ==\n  %9s %6s %8s %8s %9s %7s\n",
              run.num_kv_blocks, "time ms", "step", "running", "waiting", "KV used", "rows");
  const std::size_t every = std::max<std::size_t>(1, run.steps.size() / std::size_t(every_n_lines));
  for (std::size_t i = 0; i < run.steps.size(); i += every) {
    const engine::StepSample& s = run.steps[i];
    std::printf("  %9.0f %6zu %8d %8d %8.0f%% %7d\n", 1e3 * (s.time_s - run.start_s), i,
                s.num_running, s.num_waiting, 100.0 * s.kv_blocks_used / run.num_kv_blocks,
                s.num_batched_tokens);
  }
}

int run_sched_bench(const Args& a) {
  nlohmann::json report = make_report("ch04_continuous_batching sched-bench", "host", "host CPU");
  std::printf("== scheduler host cost: schedule() + update() with N running sequences decoding "
              "(no model; host CPU) ==\n  %6s %8s %12s %12s %10s\n", "seqs", "steps",
              "schedule us", "update us", "ns/seq");
  for (int n : a.bench_seqs) {
    harness::SchedulerBenchOptions o;
    o.num_seqs = n;
    o.decode_steps = a.tour ? 16 : 64;
    const harness::SchedulerBenchResult r = harness::bench_scheduler(o);
    std::printf("  %6d %8lld %12.1f %12.1f %10.0f\n", r.num_seqs, r.steps, r.schedule_us,
                r.update_us, r.ns_per_seq());
    report["records"].push_back({{"table", "sched_bench"}, {"num_seqs", r.num_seqs},
                                 {"steps", r.steps}, {"schedule_us", r.schedule_us},
                                 {"update_us", r.update_us}, {"ns_per_seq", r.ns_per_seq()}});
  }
  if (!a.json.empty()) write_json(a.json, report);
  return 0;
}

int run(const Args& a, const std::string& sweep) {
  const ModelBundle b = load_model_bundle(a.model);
  const ModelConfig& c = b.model.config;
  const std::string device = engine::device_name();  // first: a missing GPU is one clear error
  const DType dtype = parse_dtype(a.dtype);
  const DType kv_dtype = a.kv_dtype.empty() ? dtype : parse_dtype(a.kv_dtype);
  const engine::DeviceModel dm(b.model, dtype);
  const std::string model_name = c.name.substr(c.name.find_last_of('/') + 1);

  RunSetup s;
  s.model = &dm;
  s.executor = a.executor == "cost-model" ? ExecutorKind::kCostModel : ExecutorKind::kModel;
  s.clock = harness::parse_clock_kind(a.clock);
  s.vocab_size = c.vocab_size;
  s.kv_dtype = kv_dtype;
  s.cuda_graphs = !a.no_cuda_graphs;
  // The precision the model runs in here (the cost model times that precision too).
  roofline::Precision precision = roofline::Precision::dense(dtype_bytes(dtype));
  precision.kv_bytes = dtype_bytes(kv_dtype);
  s.cost = harness::PassTimer{c, precision, cli::cost_device(a.cost_device), {}, {}};
  s.scheduler = a.scheduler;
  s.scheduler.max_model_len = std::min(a.scheduler.max_model_len, c.max_seq_len);
  s.scheduler.enable_chunked_prefill = !a.no_chunked_prefill;
  s.scheduler.enable_prefix_caching = !a.no_prefix_caching;
  std::string budget_note;
  if (a.no_chunked_prefill && s.scheduler.max_num_batched_tokens < s.scheduler.max_model_len) {
    // Rule 3 of the scheduler: without chunking a whole prompt must fit one step. A budget
    // the user chose is not silently replaced; the default one is raised, and the output says so.
    if (a.budget_given) {
      throw InvalidArgument("--max-num-batched-tokens " +
                            std::to_string(s.scheduler.max_num_batched_tokens) +
                            " is less than max_model_len " +
                            std::to_string(s.scheduler.max_model_len) +
                            ": with --no-chunked-prefill a whole prompt must fit one step (raise "
                            "it, lower --max-model-len, or allow chunked prefill)");
    }
    s.scheduler.max_num_batched_tokens = s.scheduler.max_model_len;
    budget_note = " (raised from the default to max_model_len: no chunked prefill)";
  }
  s.scheduler.validate();
  if (s.executor == ExecutorKind::kModel) {
    const int pool = std::max(s.scheduler.num_kv_blocks,
                              sweep == "sweep-pool" && !a.pool_blocks.empty()
                                  ? *std::max_element(a.pool_blocks.begin(), a.pool_blocks.end())
                                  : 0);
    engine::check_device_memory(double(pool) * s.scheduler.block_size *
                                    double(c.kv_bytes_per_token(dtype_bytes(kv_dtype))),
                                "the KV pool of " + std::to_string(pool) + " blocks (--num-blocks" +
                                    std::string(sweep == "sweep-pool" ? "/--pool-blocks" : "") +
                                    ") x --block-size " + std::to_string(s.scheduler.block_size));
  }
  s.batcher.batch_size = std::max(1, a.compare_static);
  s.batcher.max_model_len = s.scheduler.max_model_len;
  s.batcher.num_kv_blocks = s.scheduler.num_kv_blocks;
  s.batcher.block_size = s.scheduler.block_size;

  std::printf("ch04_continuous_batching: iteration-level scheduling, chunked prefill, preemption\n");
  std::printf("  model     %s (dim %d, %d layers, context %d)%s\n", model_name.c_str(), c.dim,
              c.n_layers, c.max_seq_len,
              b.format == ModelFormat::kSynthetic ? " — synthetic: random weights" : "");
  std::printf("  device    %s [%s backend], %s%s%s\n  executor  %s\n", device.c_str(),
              engine::kernel_backend(), dtype_name(dtype), kv_dtype == dtype ? "" : ", KV ",
              kv_dtype == dtype ? "" : dtype_name(kv_dtype), describe(s).c_str());
  const engine::SchedulerConfig& sc = s.scheduler;
  std::printf("  scheduler max_num_seqs %d, max_num_batched_tokens %d%s, chunked prefill %s, "
              "prefix caching %s,\n            KV pool %d blocks of %d, max_model_len %d\n",
              sc.max_num_seqs, sc.max_num_batched_tokens, budget_note.c_str(),
              sc.enable_chunked_prefill ? "on" : "off",
              sc.enable_prefix_caching ? "on" : "off", sc.num_kv_blocks, sc.block_size,
              sc.max_model_len);

  nlohmann::json report = make_report("ch04_continuous_batching", engine::kernel_backend(), device);
  report["clock"] = a.clock;
  report["executor"] = a.executor;
  report["model"] = model_name;
  if (s.cost.device != nullptr) {
    report["cost_model"] = cli::cost_model_json(*s.cost.device, s.cost.precision);
    report["cost_model"]["cuda_graph"] = s.cuda_graphs;  // decode steps as graph launches
  }
  nlohmann::json& records = report["records"];
  const std::vector<engine::Request> requests = harness::build_workload(a.workload, *b.tokenizer, c.vocab_size);
  if (s.executor == ExecutorKind::kModel) harness::check_wall_clock_wait(requests, s.clock);
  std::printf("  workload  %s\n",
              harness::describe_workload(a.workload, requests.size()).c_str());

  if (sweep == "sweep-rate") {
    if (!a.workload.trace.empty()) {
      throw InvalidArgument("sweep-rate regenerates the workload at each rate: use the generator "
                            "flags, not --trace");
    }
    std::vector<double> rates;
    for (const std::string& r : a.rates) {
      rates.push_back(r == "inf" ? std::numeric_limits<double>::infinity() : std::stod(r));
      if (s.executor == ExecutorKind::kModel && s.clock == harness::ClockKind::kWall) {
        harness::WorkloadOptions w = a.workload;  // the wait each rate's workload would take
        w.rate = rates.back();
        harness::check_wall_clock_wait(harness::build_workload(w, *b.tokenizer, c.vocab_size),
                                        s.clock);
      }
    }
    sweep_rate(s, a.workload, *b.tokenizer, rates, records);
  } else if (sweep == "sweep-chunked") {
    sweep_chunked(s, requests, a.budgets, records);
  } else if (sweep == "sweep-pool") {
    sweep_pool(s, requests, a.pool_blocks, records);
  } else {
    // Records (a KV point per step, a latency per request) only when they will be written:
    // memory follows the work asked for.
    const bool keep = !a.json.empty();
    std::vector<std::pair<std::string, harness::ServingMetrics>> rows;
    std::vector<std::string> rejections;  // printed under the table
    double modeled_continuous = 0, modeled_static = 0;  // kModel with --cost-device
    engine::StepCounters steps;                         // kModel
    const engine::ServingRun run = run_continuous_on(s, requests, &modeled_continuous, &steps);
    rows.emplace_back("continuous", harness::compute_metrics(run));
    nlohmann::json rec = harness::metrics_record("continuous", rows.back().second);
    if (modeled_continuous > 0) rec["modeled_s"] = modeled_continuous;
    if (s.executor == ExecutorKind::kModel) rec["steps"] = engine::to_json(steps);
    rec["table"] = "serving";
    rejections.push_back(harness::rejection_line("continuous", run, &rec));
    if (keep) {
      records.push_back(rec);
      records.push_back({{"table", "kv_timeline"}, {"config", "continuous"}, {"points", harness::kv_timeline(run)}});
      records.push_back(latency_record("continuous", run));
    }
    if (a.compare_static > 0) {
      const engine::ServingRun st = run_static_on(s, requests, &modeled_static);
      rows.emplace_back("static b=" + std::to_string(a.compare_static), harness::compute_metrics(st));
      nlohmann::json srec = harness::metrics_record(rows.back().first, rows.back().second);
      if (modeled_static > 0) srec["modeled_s"] = modeled_static;
      srec["table"] = "serving";
      rejections.push_back(harness::rejection_line(rows.back().first, st, &srec));
      if (keep) {
        records.push_back(srec);
        records.push_back({{"table", "kv_timeline"}, {"config", rows.back().first}, {"points", harness::kv_timeline(st)}});
        records.push_back(latency_record(rows.back().first, st));
      }
    }
    std::printf("\n== serving metrics (%s; CPU-simulator timings show the trend, not GPU speed) ==\n",
                describe(s).c_str());
    harness::print_metrics_table(rows);
    harness::print_rejections(rejections);
    if (modeled_continuous > 0) {
      // The same passes on the modeled GPU, back to back (busy time; arrival gaps aside).
      std::printf("  %s, %s: the same passes take", cli::modeled_label(*s.cost.device).c_str(),
                  s.cost.precision.label().c_str());
      const double modeled[2] = {modeled_continuous, modeled_static};
      for (std::size_t i = 0; i < rows.size(); ++i) {
        std::printf("%s %s %.2f ms busy (%.1f out tok/s)", i ? ";" : "", rows[i].first.c_str(),
                    1e3 * modeled[i], double(rows[i].second.output_tokens) / modeled[i]);
      }
      std::printf("\n  vs %s above\n", std::string(engine::kernel_backend()) == "sim"
                                           ? "simulated (CPU time)" : "measured (GPU)");
    }
    const harness::ServingMetrics& m = rows.front().second;
    std::printf("  continuous: %lld passes, %.1f rows per pass, KV peak %d of %d blocks (mean "
                "%.0f%%), %lld preemptions, prefix cache %lld/%lld blocks hit, %lld prompt "
                "tokens skipped\n", m.num_steps, m.mean_batch_tokens, m.kv_blocks_peak,
                m.kv_blocks, 100 * m.kv_usage_mean, m.num_preemptions, m.prefix_hits,
                m.prefix_queries, m.prefill_tokens_skipped);
    if (s.executor == ExecutorKind::kModel) {
      std::printf("  continuous, the step on the device: %s\n", engine::describe(steps).c_str());
    }
    print_kv_timeline(run, a.tour ? 8 : 16);
  }
  if (!a.json.empty()) write_json(a.json, report);
  return 0;
}

}  // namespace
}  // namespace nanoserve::ch04

int main(int argc, char** argv) {
  using nanoserve::ch04::Args;
  namespace cli = nanoserve::cli;
  Args a;
  a.scheduler.max_num_seqs = 16;
  a.scheduler.max_num_batched_tokens = 64;
  a.scheduler.num_kv_blocks = 256;
  a.workload.output_len = "lognormal:16:1:4:96";
  CLI::App app{"Chapter 4: continuous batching (see chapters/ch04_continuous_batching/README.md)"};
  app.fallthrough();  // workload and scheduler flags also apply after a sweep's name
  app.add_option("--model,-m", a.model, "model file, directory or synthetic:<name>")->capture_default_str();
  app.add_option("--dtype", a.dtype, "storage type of weights and activations (--tour: fp32 unless given)")->capture_default_str()
      ->check(CLI::IsMember({"fp32", "fp16", "bf16"}));
  app.add_option("--kv-dtype", a.kv_dtype, "storage type of the KV cache (default: --dtype)")
      ->check(CLI::IsMember({"fp32", "fp16", "bf16"}));
  nanoserve::harness::add_workload_flags(app, a.workload);
  app.add_option("--max-num-seqs", a.scheduler.max_num_seqs, "most running requests")->capture_default_str()
      ->check(CLI::Range(1, 4096));
  app.add_option("--max-num-batched-tokens", a.scheduler.max_num_batched_tokens, "token budget per step")
      ->capture_default_str()->check(CLI::Range(1, 16384));
  app.add_option("--max-model-len", a.scheduler.max_model_len, "most tokens per request (cut to the model's context)")
      ->capture_default_str()->check(CLI::Range(1, 1 << 20));
  app.add_flag("--no-chunked-prefill", a.no_chunked_prefill, "admit a prompt only when all of it fits one step");
  app.add_flag("--no-prefix-caching", a.no_prefix_caching, "do not reuse cached prompt blocks");
  app.add_option("--num-blocks", a.scheduler.num_kv_blocks, "KV pool size in blocks (shrink it to force preemption)")
      ->capture_default_str()->check(CLI::Range(1, 1 << 20));
  app.add_option("--block-size", a.scheduler.block_size, "tokens per KV block")->capture_default_str()
      ->check(CLI::Range(1, 4096));
  app.add_option("--compare-static", a.compare_static, "also run static batching with this batch size (0 = no)")
      ->capture_default_str()->check(CLI::Range(0, nanoserve::harness::kMaxTraceRequests));
  app.add_option("--clock", a.clock, "wall or cpu (per-pass CPU time, idle gaps skipped)")->capture_default_str()
      ->check(CLI::IsMember({"wall", "cpu"}));
  app.add_option("--executor", a.executor, "model, or cost-model (virtual time, a GPU-like cost shape)")
      ->capture_default_str()->check(CLI::IsMember({"model", "cost-model"}));
  cli::add_cost_device_flag(app, a.cost_device);
  app.add_flag("--no-cuda-graphs", a.no_cuda_graphs,
               "launch decode steps kernel by kernel instead of replaying CUDA graphs (to compare)");
  app.add_option("--json", a.json, "also write every table as JSON records to this path");
  app.add_flag("--tour", a.tour, "a short run for scripts/tour.sh: 8 requests, static batching alongside");
  CLI::App* rate = app.add_subcommand("sweep-rate", "static vs continuous throughput and latency per request rate");
  rate->add_option("--rates", a.rates, "arrival rates (per second; inf = offline)")->capture_default_str()->delimiter(',')
      ->check(cli::number_in(0, std::numeric_limits<double>::infinity(), /*open_low=*/true));
  CLI::App* chunked = app.add_subcommand("sweep-chunked", "chunked prefill on/off: TTFT and inter-token latency");
  chunked->add_option("--budgets", a.budgets, "token budgets with chunking")->capture_default_str()->delimiter(',')
      ->check(CLI::Range(1, 16384));
  CLI::App* pool = app.add_subcommand("sweep-pool", "preemptions as the KV pool shrinks");
  pool->add_option("--pool-blocks", a.pool_blocks, "pool sizes in blocks")->capture_default_str()->delimiter(',')
      ->check(CLI::Range(1, 1 << 20));
  CLI::App* bench = app.add_subcommand("sched-bench", "host µs per schedule() with hundreds of running sequences");
  bench->add_option("--num-seqs", a.bench_seqs, "running sequences")->capture_default_str()->delimiter(',')
      ->check(CLI::Range(1, nanoserve::harness::kMaxBenchSeqs));
  app.require_subcommand(0, 1);
  return cli::run_program("ch04_continuous_batching", app, argc, argv, [&] {
    a.budget_given = app.count("--max-num-batched-tokens") > 0;
    if (a.tour && app.count("--dtype") == 0) a.dtype = "fp32";  // tours: the exact mode
    if (a.tour) {
      a.workload.num_requests = std::min(a.workload.num_requests, 8);
      if (app.count("--output-len") == 0) a.workload.output_len = "lognormal:8:1:2:24";
      if (app.count("--prompt-len") == 0) a.workload.prompt_len = "uniform:4:48";
      if (app.count("--compare-static") == 0) a.compare_static = 4;
      if (app.count("--clock") == 0) a.clock = "cpu";
      if (app.count("--max-num-batched-tokens") == 0) a.scheduler.max_num_batched_tokens = 32;
    }
    if (bench->parsed()) return nanoserve::ch04::run_sched_bench(a);
    const std::string sweep = rate->parsed() ? "sweep-rate" : chunked->parsed() ? "sweep-chunked"
                              : pool->parsed() ? "sweep-pool" : "";
    return nanoserve::ch04::run(a, sweep);
  });
}
