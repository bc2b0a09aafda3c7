#include "chapters/ch04_continuous_batching/serving_runs.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

#include "common/cli/cost_device.h"
#include "common/harness/fake_executor.h"
#include "common/engine/serve/model_executor.h"
#include "common/engine/serve/serving_loop.h"
#include "common/engine/serve/static_batcher.h"
#include "common/harness/serving_checks.h"

namespace nanoserve::ch04 {

namespace {

// The cost model: a decode step on a GPU is dominated by reading the weights once (a fixed
// cost per pass), and each row adds a little compute — FakeExecutor's defaults.
const harness::FakeCostModel kCostModel{};

// One run of a batching policy: static (`batcher`) or continuous (`scheduler`) on the executor
// and clock of `s`.
engine::ServingRun run_on(const RunSetup& s, const std::vector<engine::Request>& requests,
                          bool continuous, double* modeled_s, engine::StepCounters* steps) {
  // No batch holds more requests than the workload has: buffers follow the work.
  engine::StaticBatchConfig batcher = s.batcher;
  batcher.batch_size = std::max(1, std::min<int>(batcher.batch_size, int(requests.size())));
  const auto run = [&](engine::Executor& executor, engine::Clock& clock) {
    return continuous ? engine::run_continuous(requests, s.scheduler, executor, clock)
                      : engine::run_static(requests, batcher, executor, clock);
  };
  engine::ModelExecutorOptions options =
      continuous ? engine::executor_options_for(s.scheduler)
                 : engine::executor_options_for(batcher, s.scheduler.max_num_batched_tokens);
  options.kv_dtype = s.kv_dtype;
  options.cuda_graphs = s.cuda_graphs;
  // The roofline models the passes as this executor launches them: decode steps that fit a
  // bucket as one (padded) graph launch.
  harness::PassTimer timer = s.cost;
  timer.graph_buckets = engine::graph_buckets(options);
  if (s.executor == ExecutorKind::kCostModel) {
    engine::SimulatedClock clock;
    harness::FakeCostModel cost = kCostModel;
    if (s.cost.device != nullptr) cost.pass_s = timer;  // the roofline of a named GPU
    harness::FakeExecutor fake(s.scheduler.num_kv_blocks, s.scheduler.block_size, s.vocab_size,
                               &clock, cost);
    return run(fake, clock);
  }
  engine::ModelExecutor executor(*s.model, options);
  harness::ModeledExecutor modeled(executor, timer);
  const bool model_it = s.cost.device != nullptr;
  harness::TimedExecutor timed(s.clock, model_it ? static_cast<engine::Executor&>(modeled) : executor);
  engine::ServingRun result = run(timed.executor(), timed.clock());
  if (model_it && modeled_s != nullptr) *modeled_s = modeled.modeled_s();
  if (steps != nullptr) *steps = executor.counters();
  return result;
}

std::string rate_text(double rate) {
  char buf[32];
  if (std::isinf(rate)) return "inf";
  std::snprintf(buf, sizeof buf, "%g", rate);
  return buf;
}

nlohmann::json record(const std::string& table, const std::string& config,
                      const harness::ServingMetrics& m) {
  nlohmann::json r = harness::metrics_record(config, m);
  r["table"] = table;
  return r;
}

}  // namespace

engine::ServingRun run_continuous_on(const RunSetup& s, const std::vector<engine::Request>& requests,
                                     double* modeled_s, engine::StepCounters* steps) {
  return run_on(s, requests, /*continuous=*/true, modeled_s, steps);
}

engine::ServingRun run_static_on(const RunSetup& s, const std::vector<engine::Request>& requests,
                                 double* modeled_s, engine::StepCounters* steps) {
  return run_on(s, requests, /*continuous=*/false, modeled_s, steps);
}

std::string describe(const RunSetup& s) {
  if (s.executor == ExecutorKind::kCostModel && s.cost.device != nullptr) {
    return "cost model (FakeExecutor in virtual time, each pass at its " +
           cli::modeled_label(*s.cost.device) + " time, " + s.cost.precision.label() +
           "; not the model)";
  }
  if (s.executor == ExecutorKind::kCostModel) {
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  "cost model (FakeExecutor: %.0f ms per pass + %.1f ms per row, virtual time; "
                  "not the model)", 1e3 * kCostModel.step_s, 1e3 * kCostModel.row_s);
    return buf;
  }
  return std::string("model through the kernels, ") +
         (s.clock == harness::ClockKind::kCpu ? "cpu clock" : "wall clock") +
         (s.cuda_graphs ? ", decode steps as CUDA graphs" : ", no CUDA graphs");
}

void sweep_rate(const RunSetup& s, harness::WorkloadOptions workload, const Tokenizer& tok,
                const std::vector<double>& rates, nlohmann::json& records) {
  std::printf("\n== throughput vs request rate: static (batch %d) vs continuous (max_num_seqs %d)"
              " — %s ==\n", s.batcher.batch_size, s.scheduler.max_num_seqs, describe(s).c_str());
  std::printf("  %6s | %10s %10s %8s | %10s %10s %8s | %7s\n", "rate/s", "static t/s",
              "e2e p99 ms", "waste", "cont. t/s", "e2e p99 ms", "preempt", "speedup");
  std::vector<std::string> rejections;  // printed under the table
  for (double rate : rates) {
    workload.rate = rate;
    const std::vector<engine::Request> requests = harness::build_workload(workload, tok, s.vocab_size);
    const engine::ServingRun st_run = run_static_on(s, requests);
    const engine::ServingRun co_run = run_continuous_on(s, requests);
    rejections.push_back(harness::rejection_line("rate " + rate_text(rate) + ", static", st_run, nullptr, false));
    rejections.push_back(harness::rejection_line("rate " + rate_text(rate) + ", continuous", co_run, nullptr, false));
    const harness::ServingMetrics st = harness::compute_metrics(st_run);
    const harness::ServingMetrics co = harness::compute_metrics(co_run);
    const double speedup = st.output_tokens_per_s > 0 ? co.output_tokens_per_s / st.output_tokens_per_s : 0;
    std::printf("  %6s | %10.1f %10.0f %7.1f%% | %10.1f %10.0f %8lld | %6.2fx\n",
                rate_text(rate).c_str(), st.output_tokens_per_s, 1e3 * st.e2e.p99,
                100 * st.waste.waste_fraction(), co.output_tokens_per_s, 1e3 * co.e2e.p99,
                co.num_preemptions, speedup);
    for (auto [policy, m] : {std::pair<const char*, const harness::ServingMetrics*>{"static", &st},
                             {"continuous", &co}}) {
      nlohmann::json r = record("rate_sweep", policy, *m);
      r["policy"] = policy;
      r["rate"] = std::isinf(rate) ? -1.0 : rate;
      r["executor"] = s.executor == ExecutorKind::kModel ? "model" : "cost-model";
      if (s.executor == ExecutorKind::kCostModel && s.cost.device != nullptr) {
        r["cost_device"] = s.cost.device->key;
      }
      records.push_back(r);
    }
  }
  harness::print_rejections(rejections);
}

void sweep_chunked(const RunSetup& s, const std::vector<engine::Request>& requests,
                   const std::vector<int>& budgets, nlohmann::json& records) {
  std::printf("\n== chunked prefill: a long prompt no longer stalls the running decodes — %s ==\n",
              describe(s).c_str());
  std::printf("  %-22s %8s %8s %8s %8s %8s %8s\n", "config", "out t/s", "TTFT p50", "TTFT p99",
              "ITL p50", "ITL p99", "ITL max");
  std::vector<std::pair<std::string, engine::SchedulerConfig>> configs;
  for (int budget : budgets) {
    engine::SchedulerConfig c = s.scheduler;
    c.enable_chunked_prefill = true;
    c.max_num_batched_tokens = budget;
    configs.emplace_back("chunked, budget " + std::to_string(budget), c);
  }
  engine::SchedulerConfig off = s.scheduler;
  off.enable_chunked_prefill = false;
  off.max_num_batched_tokens = std::max(off.max_num_batched_tokens, off.max_model_len);
  configs.emplace_back("no chunking", off);
  std::vector<std::string> rejections;  // printed under the table
  for (const auto& [label, config] : configs) {
    RunSetup run_setup = s;
    run_setup.scheduler = config;
    const engine::ServingRun run = run_continuous_on(run_setup, requests);
    rejections.push_back(harness::rejection_line(label, run, nullptr, false));
    const harness::ServingMetrics m = harness::compute_metrics(run);
    std::printf("  %-22s %8.1f %8.0f %8.0f %8.1f %8.1f %8.1f\n", label.c_str(),
                m.output_tokens_per_s, 1e3 * m.ttft.p50, 1e3 * m.ttft.p99, 1e3 * m.itl.p50,
                1e3 * m.itl.p99, 1e3 * m.itl.max);
    nlohmann::json r = record("chunked", label, m);
    r["chunked"] = config.enable_chunked_prefill;
    r["budget"] = config.max_num_batched_tokens;
    records.push_back(r);
  }
  std::printf("  (ms; ITL = every gap between two tokens of a request)\n");
  harness::print_rejections(rejections);
}

void sweep_pool(const RunSetup& s, const std::vector<engine::Request>& requests,
                const std::vector<int>& blocks, nlohmann::json& records) {
  std::printf("\n== preemption as the KV pool shrinks (block %d, recompute) — %s ==\n",
              s.scheduler.block_size, describe(s).c_str());
  std::printf("  %7s %8s %9s %8s %8s %9s %9s %9s\n", "blocks", "done", "rejected", "preempt",
              "out t/s", "e2e p50", "e2e p99", "KV peak");
  for (int n : blocks) {
    RunSetup run_setup = s;
    run_setup.scheduler.num_kv_blocks = n;
    const engine::ServingRun run = run_continuous_on(run_setup, requests);
    const harness::ServingMetrics m = harness::compute_metrics(run);
    std::printf("  %7d %8d %9d %8lld %8.1f %9.0f %9.0f %8.0f%%\n", n, m.num_completed,
                m.num_rejected, m.num_preemptions, m.output_tokens_per_s, 1e3 * m.e2e.p50,
                1e3 * m.e2e.p99, 100.0 * m.kv_blocks_peak / n);
    nlohmann::json r = record("pool", "blocks " + std::to_string(n), m);
    r["num_blocks"] = n;
    records.push_back(r);
  }
}

}  // namespace nanoserve::ch04
