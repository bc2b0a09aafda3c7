#include "chapters/ch04_continuous_batching/serving_runs.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

#include "chapters/serving_checks.h"
#include "common/engine/fake_executor.h"
#include "common/engine/model_executor.h"
#include "common/engine/serving_loop.h"

namespace nanoserve::ch04 {

namespace {

// The cost model: a decode step on a GPU is dominated by reading the weights once (a fixed
// cost per pass), and each row adds a little compute — FakeExecutor's defaults.
const FakeCostModel kCostModel{};

ServingRun run_policy(const RunSetup& s, engine::ModelExecutorOptions options,
                      const engine::PolicyRun& policy) {
  if (s.executor == ExecutorKind::kCostModel) {
    SimulatedClock clock;
    FakeExecutor fake(s.scheduler.num_kv_blocks, s.scheduler.block_size, s.vocab_size, &clock,
                      kCostModel);
    return policy(fake, clock);
  }
  engine::ModelExecutor executor(*s.model, options);
  return engine::run_with_clock(s.clock, executor, policy);
}

std::string rate_text(double rate) {
  char buf[32];
  if (std::isinf(rate)) return "inf";
  std::snprintf(buf, sizeof buf, "%g", rate);
  return buf;
}

nlohmann::json record(const std::string& table, const std::string& config,
                      const ServingMetrics& m) {
  nlohmann::json r = metrics_record(config, m);
  r["table"] = table;
  return r;
}

}  // namespace

ServingRun run_continuous_on(const RunSetup& s, const std::vector<Request>& requests) {
  return run_policy(s, engine::executor_options_for(s.scheduler),
                    [&](Executor& ex, Clock& clock) {
                      return run_continuous(requests, s.scheduler, ex, clock);
                    });
}

ServingRun run_static_on(const RunSetup& s, const std::vector<Request>& requests) {
  // No batch holds more requests than the workload has: buffers follow the work.
  StaticBatchConfig batcher = s.batcher;
  batcher.batch_size = std::max(1, std::min<int>(batcher.batch_size, int(requests.size())));
  return run_policy(s, engine::executor_options_for(batcher, s.scheduler.max_num_batched_tokens),
                    [&](Executor& ex, Clock& clock) {
                      return run_static(requests, batcher, ex, clock);
                    });
}

std::string describe(const RunSetup& s) {
  if (s.executor == ExecutorKind::kCostModel) {
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  "cost model (FakeExecutor: %.0f ms per pass + %.1f ms per row, virtual time; "
                  "not the model)", 1e3 * kCostModel.step_s, 1e3 * kCostModel.row_s);
    return buf;
  }
  return std::string("model through the kernels, ") +
         (s.clock == engine::ClockKind::kCpu ? "cpu clock" : "wall clock");
}

void sweep_rate(const RunSetup& s, engine::WorkloadOptions workload, const Tokenizer& tok,
                const std::vector<double>& rates, nlohmann::json& records) {
  std::printf("\n== throughput vs request rate: static (batch %d) vs continuous (max_num_seqs %d)"
              " — %s ==\n", s.batcher.batch_size, s.scheduler.max_num_seqs, describe(s).c_str());
  std::printf("  %6s | %10s %10s %8s | %10s %10s %8s | %7s\n", "rate/s", "static t/s",
              "e2e p99 ms", "waste", "cont. t/s", "e2e p99 ms", "preempt", "speedup");
  std::vector<std::string> rejections;  // printed under the table
  for (double rate : rates) {
    workload.rate = rate;
    const std::vector<Request> requests = engine::build_workload(workload, tok, s.vocab_size);
    const ServingRun st_run = run_static_on(s, requests);
    const ServingRun co_run = run_continuous_on(s, requests);
    rejections.push_back(chapters::rejection_line("rate " + rate_text(rate) + ", static", st_run, nullptr, false));
    rejections.push_back(chapters::rejection_line("rate " + rate_text(rate) + ", continuous", co_run, nullptr, false));
    const ServingMetrics st = compute_metrics(st_run);
    const ServingMetrics co = compute_metrics(co_run);
    const double speedup = st.output_tokens_per_s > 0 ? co.output_tokens_per_s / st.output_tokens_per_s : 0;
    std::printf("  %6s | %10.1f %10.0f %7.1f%% | %10.1f %10.0f %8lld | %6.2fx\n",
                rate_text(rate).c_str(), st.output_tokens_per_s, 1e3 * st.e2e.p99,
                100 * st.waste.waste_fraction(), co.output_tokens_per_s, 1e3 * co.e2e.p99,
                co.num_preemptions, speedup);
    for (auto [policy, m] : {std::pair<const char*, const ServingMetrics*>{"static", &st},
                             {"continuous", &co}}) {
      nlohmann::json r = record("rate_sweep", policy, *m);
      r["policy"] = policy;
      r["rate"] = std::isinf(rate) ? -1.0 : rate;
      r["executor"] = s.executor == ExecutorKind::kModel ? "model" : "cost-model";
      records.push_back(r);
    }
  }
  chapters::print_rejections(rejections);
}

void sweep_chunked(const RunSetup& s, const std::vector<Request>& requests,
                   const std::vector<int>& budgets, nlohmann::json& records) {
  std::printf("\n== chunked prefill: a long prompt no longer stalls the running decodes — %s ==\n",
              describe(s).c_str());
  std::printf("  %-22s %8s %8s %8s %8s %8s %8s\n", "config", "out t/s", "TTFT p50", "TTFT p99",
              "ITL p50", "ITL p99", "ITL max");
  std::vector<std::pair<std::string, SchedulerConfig>> configs;
  for (int budget : budgets) {
    SchedulerConfig c = s.scheduler;
    c.enable_chunked_prefill = true;
    c.max_num_batched_tokens = budget;
    configs.emplace_back("chunked, budget " + std::to_string(budget), c);
  }
  SchedulerConfig off = s.scheduler;
  off.enable_chunked_prefill = false;
  off.max_num_batched_tokens = std::max(off.max_num_batched_tokens, off.max_model_len);
  configs.emplace_back("no chunking", off);
  std::vector<std::string> rejections;  // printed under the table
  for (const auto& [label, config] : configs) {
    RunSetup run_setup = s;
    run_setup.scheduler = config;
    const ServingRun run = run_continuous_on(run_setup, requests);
    rejections.push_back(chapters::rejection_line(label, run, nullptr, false));
    const ServingMetrics m = compute_metrics(run);
    std::printf("  %-22s %8.1f %8.0f %8.0f %8.1f %8.1f %8.1f\n", label.c_str(),
                m.output_tokens_per_s, 1e3 * m.ttft.p50, 1e3 * m.ttft.p99, 1e3 * m.itl.p50,
                1e3 * m.itl.p99, 1e3 * m.itl.max);
    nlohmann::json r = record("chunked", label, m);
    r["chunked"] = config.enable_chunked_prefill;
    r["budget"] = config.max_num_batched_tokens;
    records.push_back(r);
  }
  std::printf("  (ms; ITL = every gap between two tokens of a request)\n");
  chapters::print_rejections(rejections);
}

void sweep_pool(const RunSetup& s, const std::vector<Request>& requests,
                const std::vector<int>& blocks, nlohmann::json& records) {
  std::printf("\n== preemption as the KV pool shrinks (block %d, recompute) — %s ==\n",
              s.scheduler.block_size, describe(s).c_str());
  std::printf("  %7s %8s %9s %8s %8s %9s %9s %9s\n", "blocks", "done", "rejected", "preempt",
              "out t/s", "e2e p50", "e2e p99", "KV peak");
  for (int n : blocks) {
    RunSetup run_setup = s;
    run_setup.scheduler.num_kv_blocks = n;
    const ServingRun run = run_continuous_on(run_setup, requests);
    const ServingMetrics m = compute_metrics(run);
    std::printf("  %7d %8d %9d %8lld %8.1f %9.0f %9.0f %8.0f%%\n", n, m.num_completed,
                m.num_rejected, m.num_preemptions, m.output_tokens_per_s, 1e3 * m.e2e.p50,
                1e3 * m.e2e.p99, 100.0 * m.kv_blocks_peak / n);
    nlohmann::json r = record("pool", "blocks " + std::to_string(n), m);
    r["num_blocks"] = n;
    records.push_back(r);
  }
}

}  // namespace nanoserve::ch04
