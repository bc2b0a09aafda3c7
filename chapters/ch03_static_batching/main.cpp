// Chapter 3: static batching — many requests share each forward pass, the old way.
//
//   ch03_static_batching --batch-sizes 1,4,8 --num-requests 16 --rate inf
//   ch03_static_batching --trace data/traces/fixed_offline.jsonl --batch-sizes 8
//
// Groups the workload's requests in arrival order into batches, runs every batch through the
// model (kernels over paged KV, one forward pass per lockstep step) until its LAST member
// finishes, and reports throughput, per-request latency and the rows a padded batch computes
// for nothing: padding up to the longest prompt, and the rows of members that finished
// early. README.md is the tutorial that walks through this file.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "common/harness/workload_flags.h"
#include "common/harness/serving_metrics.h"
#include "common/engine/model/device_info.h"
#include "common/engine/model/device_model.h"
#include "common/engine/serve/model_executor.h"
#include "common/harness/clocks.h"
#include "common/harness/workload_options.h"
#include "common/engine/serve/static_batcher.h"
#include "common/harness/serving_checks.h"
#include "common/cli/cli_checks.h"
#include "common/cli/cost_device.h"
#include "common/cli/program.h"
#include "common/harness/modeled_executor.h"
#include "common/model_bundle.h"
#include "common/report.h"

namespace nanoserve::ch03 {
namespace {

struct Args {
  std::string model = default_model_spec();
  harness::WorkloadOptions workload;
  std::vector<int> batch_sizes = {1, 4, 8};
  double max_wait_s = std::numeric_limits<double>::infinity();
  int max_model_len = 256;
  int num_blocks = 1024;
  int block_size = 16;
  int max_tokens_per_step = 512;
  std::string dtype = nanoserve::engine::default_dtype();  // bf16 on a GPU build, fp32 in the simulator
  std::string kv_dtype;        // empty: --dtype
  bool skip_wasted_rows = false;
  std::string clock = "wall";
  std::string cost_device;  // --cost-device: also the roofline model's time of every pass
  bool no_cuda_graphs = false;  // --no-cuda-graphs: every pass launched kernel by kernel
  bool tour = false;
  std::string json;
};

// The first batch of a run, member by member: where its batch row idled.
void print_first_batch(const engine::ServingRun& run, int batch_size) {
  const int n = std::min<int>(batch_size, static_cast<int>(run.requests.size()));
  if (n < 2) return;
  int steps = 0;
  for (int i = 0; i < n; ++i) steps = std::max(steps, run.requests[std::size_t(i)].num_output_tokens());
  std::printf("  first batch of %d: %d lockstep steps (its longest member); per member:\n", n, steps);
  std::printf("    %4s %7s %9s %10s   batch row over the steps (g = generating, . = idle)\n", "req",
              "prompt", "generated", "idle steps");
  for (int i = 0; i < n; ++i) {
    const engine::Request& r = run.requests[std::size_t(i)];
    const int g = r.num_output_tokens();
    std::string bar = std::string(std::size_t(g), 'g') + std::string(std::size_t(steps - g), '.');
    if (bar.size() > 60) bar = bar.substr(0, 57) + "...";
    std::printf("    %4lld %7d %9d %10d   %s\n", static_cast<long long>(r.id()), r.prompt_len, g,
                steps - g, bar.c_str());
  }
}

int run(const Args& a) {
  const ModelBundle b = load_model_bundle(a.model);
  const ModelConfig& c = b.model.config;
  const std::string device = engine::device_name();  // first: a missing GPU is one clear error
  const DType dtype = parse_dtype(a.dtype);
  const DType kv_dtype = a.kv_dtype.empty() ? dtype : parse_dtype(a.kv_dtype);
  const engine::DeviceModel dm(b.model, dtype);
  const harness::ClockKind clock = harness::parse_clock_kind(a.clock);
  const std::string model_name = c.name.substr(c.name.find_last_of('/') + 1);
  const int max_model_len = std::min(a.max_model_len, c.max_seq_len);
  const std::vector<engine::Request> requests = harness::build_workload(a.workload, *b.tokenizer, c.vocab_size);
  harness::check_wall_clock_wait(requests, clock);
  engine::check_device_memory(double(a.num_blocks) * a.block_size *
                                  double(c.kv_bytes_per_token(dtype_bytes(kv_dtype))),
                              "the KV pool of --num-blocks " + std::to_string(a.num_blocks) +
                                  " x --block-size " + std::to_string(a.block_size));

  std::printf("ch03_static_batching: padded static batches, run until their longest member ends\n");
  std::printf("  model    %s (dim %d, %d layers, context %d)%s\n", model_name.c_str(), c.dim,
              c.n_layers, c.max_seq_len,
              b.format == ModelFormat::kSynthetic ? " — synthetic: random weights" : "");
  std::printf("  device   %s [%s backend], %s, paged KV (%d blocks of %d%s%s)\n", device.c_str(),
              engine::kernel_backend(), dtype_name(dtype), a.num_blocks, a.block_size,
              kv_dtype == dtype ? "" : ", ", kv_dtype == dtype ? "" : dtype_name(kv_dtype));
  std::printf("  clock    %s%s\n", a.clock.c_str(),
              clock == harness::ClockKind::kCpu
                  ? " (each pass charged its process CPU time; idle gaps skipped)"
                  : " (steady clock; arrivals wait in real time)");
  std::printf("  workload %s\n",
              harness::describe_workload(a.workload, requests.size()).c_str());
  std::printf("  waste    %s\n\n", a.skip_wasted_rows
                                         ? "counted only (--skip-wasted-rows): not computed"
                                         : "padding and idle rows are computed, as a padded batch does");

  nlohmann::json report = make_report("ch03_static_batching", engine::kernel_backend(), device);
  report["clock"] = a.clock;
  report["model"] = model_name;
  nlohmann::json& records = report["records"];
  // --cost-device: every pass also charged its roofline time on that GPU (in the precision run
  // here: --dtype for weights and activations, --kv-dtype for the cache).
  const roofline::Device* cost_device = cli::cost_device(a.cost_device);
  roofline::Precision precision = roofline::Precision::dense(dtype_bytes(dtype));
  precision.kv_bytes = dtype_bytes(kv_dtype);
  harness::PassTimer timer{c, precision, cost_device, {}, {}};
  if (cost_device != nullptr) {
    report["cost_model"] = cli::cost_model_json(*cost_device, timer.precision);
    report["cost_model"]["cuda_graph"] = !a.no_cuda_graphs;  // decode passes as graph launches
  }
  std::vector<std::string> modeled_lines;  // printed under the metrics table
  std::vector<std::string> step_lines;     // the step on the device, per batch size
  std::vector<std::pair<std::string, harness::ServingMetrics>> rows;
  std::printf("  %5s %9s %9s %9s %9s %8s %8s %8s\n", "batch", "out tok/s", "useful", "padding",
              "idle", "waste", "e2e p50", "e2e p99");
  std::vector<std::string> rejections;  // printed under the table
  for (int batch_size : a.batch_sizes) {
    engine::StaticBatchConfig sc;
    // No batch holds more requests than the workload has: buffers follow the work, not -b.
    sc.batch_size = std::min<int>(batch_size, static_cast<int>(requests.size()));
    sc.max_wait_s = a.max_wait_s;
    sc.max_model_len = max_model_len;
    sc.num_kv_blocks = a.num_blocks;
    sc.block_size = a.block_size;
    engine::ModelExecutorOptions eo = engine::executor_options_for(sc, a.max_tokens_per_step);
    eo.compute_wasted_rows = !a.skip_wasted_rows;
    eo.kv_dtype = kv_dtype;
    eo.cuda_graphs = !a.no_cuda_graphs;
    engine::ModelExecutor executor(dm, eo);
    timer.graph_buckets = engine::graph_buckets(eo);  // modeled as the executor launches
    harness::ModeledExecutor modeled(executor, timer);
    harness::TimedExecutor timed(clock, cost_device != nullptr ? static_cast<engine::Executor&>(modeled)
                                                               : executor);
    const engine::ServingRun run = engine::run_static(requests, sc, timed.executor(), timed.clock());
    const harness::ServingMetrics m = harness::compute_metrics(run);
    nlohmann::json rec = harness::metrics_record("static b=" + std::to_string(batch_size), m);
    if (cost_device != nullptr) {
      // Busy time only: the modeled GPU runs the same passes back to back (arrival gaps aside).
      const double tok_s = modeled.modeled_s() > 0 ? double(m.output_tokens) / modeled.modeled_s() : 0;
      char line[200];
      std::snprintf(line, sizeof line, "  %5d %8lld %12.3f %12.1f %14.1f\n", batch_size,
                    modeled.passes(), 1e3 * modeled.modeled_s(), tok_s, m.output_tokens_per_s);
      modeled_lines.push_back(line);
      rec["modeled_s"] = modeled.modeled_s();
      rec["modeled_output_tokens_per_s"] = tok_s;
    }
    rejections.push_back(harness::rejection_line("static b=" + std::to_string(batch_size), run, &rec));
    std::printf("  %5d %9.1f %9lld %9lld %9lld %7.1f%% %8.0f %8.0f\n", batch_size,
                m.output_tokens_per_s, m.waste.useful_rows, m.waste.padding_rows,
                m.waste.idle_rows, 100.0 * m.waste.waste_fraction(), 1e3 * m.e2e.p50,
                1e3 * m.e2e.p99);
    if (batch_size == a.batch_sizes.back()) print_first_batch(run, batch_size);
    rows.emplace_back("static b=" + std::to_string(batch_size), m);
    rec["table"] = "static";
    rec["batch_size"] = batch_size;
    rec["rate"] = a.workload.trace.empty() ? a.workload.rate : -1.0;
    rec["wasted_rows_computed"] = !a.skip_wasted_rows;
    rec["steps"] = engine::to_json(executor.counters());
    step_lines.push_back("  b=" + std::to_string(batch_size) + ": " +
                         engine::describe(executor.counters()) + "\n");
    records.push_back(rec);
  }
  std::printf("\n== serving metrics (%s, %s clock; CPU-simulator timings show the trend, not GPU "
              "speed) ==\n", device.c_str(), a.clock.c_str());
  harness::print_metrics_table(rows);
  harness::print_rejections(rejections);
  // A pass with padding or idle rows launches kernel by kernel; a full batch decoding replays
  // its bucket's graph (chapter 4's README, "The step on the device").
  std::printf("\n== the step on the device ==\n");
  for (const std::string& line : step_lines) std::printf("%s", line.c_str());
  if (cost_device != nullptr) {
    const std::string prec = kv_dtype == dtype
                                 ? std::string(dtype_name(dtype)) + " weights and KV"
                                 : std::string(dtype_name(dtype)) + " weights, " +
                                       dtype_name(kv_dtype) + " KV";
    std::printf("\n== %s, %s: the same passes (busy time) vs simulated ==\n"
                "  %5s %8s %12s %12s %14s\n", cli::modeled_label(*cost_device).c_str(), prec.c_str(), "batch",
                "passes", "modeled ms", "modeled t/s", "clock t/s");
    for (const std::string& line : modeled_lines) std::printf("%s", line.c_str());
    std::printf("  (modeled t/s: output tokens / Σ modeled pass time; clock t/s: the %s clock "
                "above, %s)\n", a.clock.c_str(),
                std::string(engine::kernel_backend()) == "sim" ? "simulated (CPU time)" : "measured");
  }
  if (!a.json.empty()) write_json(a.json, report);
  return 0;
}

}  // namespace
}  // namespace nanoserve::ch03

int main(int argc, char** argv) {
  using nanoserve::ch03::Args;
  namespace cli = nanoserve::cli;
  Args a;
  a.workload.rate = std::numeric_limits<double>::infinity();  // static batching's home: offline
  a.workload.prompt_len = "uniform:8:64";
  a.workload.output_len = "lognormal:16:1:4:96";
  CLI::App app{"Chapter 3: static batching (see chapters/ch03_static_batching/README.md)"};
  app.add_option("--model,-m", a.model, "model file, directory or synthetic:<name>")->capture_default_str();
  app.add_option("--dtype", a.dtype, "storage type of weights and activations (--tour: fp32 unless given)")->capture_default_str()
      ->check(CLI::IsMember({"fp32", "fp16", "bf16"}));
  app.add_option("--kv-dtype", a.kv_dtype, "storage type of the KV cache (default: --dtype)")
      ->check(CLI::IsMember({"fp32", "fp16", "bf16"}));
  nanoserve::harness::add_workload_flags(app, a.workload);
  app.add_option("--batch-sizes,-b", a.batch_sizes, "static batch sizes to compare")->capture_default_str()
      ->delimiter(',')->check(CLI::Range(1, nanoserve::harness::kMaxTraceRequests));
  app.add_option("--max-wait-s", a.max_wait_s, "start a partial batch once its first member waited this long")
      ->capture_default_str()->check(cli::number_in(0, std::numeric_limits<double>::infinity()));
  app.add_option("--max-model-len", a.max_model_len, "most tokens per request (cut to the model's context)")
      ->capture_default_str()->check(CLI::Range(1, 1 << 20));
  app.add_option("--num-blocks", a.num_blocks, "KV pool size in blocks")->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--block-size", a.block_size, "tokens per KV block")->capture_default_str()
      ->check(CLI::Range(1, 4096));
  app.add_option("--max-tokens-per-step", a.max_tokens_per_step, "rows of one forward pass (a bigger padded prefill is split)")
      ->capture_default_str()->check(CLI::Range(1, 16384));
  app.add_flag("--skip-wasted-rows", a.skip_wasted_rows, "count padding/idle rows but do not compute them");
  app.add_option("--clock", a.clock, "wall or cpu (per-pass CPU time, idle gaps skipped)")->capture_default_str()
      ->check(CLI::IsMember({"wall", "cpu"}));
  cli::add_cost_device_flag(app, a.cost_device);
  app.add_flag("--no-cuda-graphs", a.no_cuda_graphs,
               "launch decode passes kernel by kernel instead of replaying CUDA graphs (to compare)");
  app.add_option("--json", a.json, "also write every table as JSON records to this path");
  app.add_flag("--tour", a.tour, "a short run for scripts/tour.sh: 8 requests, batch sizes 1 and 4");
  return cli::run_program("ch03_static_batching", app, argc, argv, [&] {
    if (a.tour && app.count("--dtype") == 0) a.dtype = "fp32";  // tours: the exact mode
    if (a.tour) {
      a.workload.num_requests = std::min(a.workload.num_requests, 8);
      if (app.count("--output-len") == 0) a.workload.output_len = "lognormal:8:1:2:24";
      if (app.count("--prompt-len") == 0) a.workload.prompt_len = "uniform:4:24";
      if (app.count("--batch-sizes") == 0) a.batch_sizes = {1, 4};
      if (app.count("--clock") == 0) a.clock = "cpu";
    }
    return nanoserve::ch03::run(a);
  });
}
