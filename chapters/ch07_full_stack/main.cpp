// Chapter 7: the whole stack in one engine.
//
//   ch07_full_stack stack                     the stacked-gains table (the article's)
//   ch07_full_stack --tour                    the same, on a small workload
//   ch07_full_stack --samples 2 --preemption swap --host-blocks 64    one run, every technique
//   ch07_full_stack --no-paged --quant none --spec none               … or some switched off
//
// One continuous-batching engine with speculative decoding (drafts verified in the batched
// pass), parallel sampling (samples forked copy-on-write), swap or recompute preemption,
// paged KV with prefix caching and INT4/INT8 weights, run on one workload ("stories with
// shared openings") through the kernels; every pass is timed by the roofline model of a named
// GPU (modeled), and the simulator's work is counted beside it. README.md is the tutorial.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "chapters/ch07_full_stack/stack_engine.h"
#include "chapters/ch07_full_stack/stack_table.h"
#include "chapters/ch07_full_stack/stack_workload.h"
#include "common/cli/cli_checks.h"
#include "common/cli/cost_device.h"
#include "common/cli/program.h"
#include "common/engine/model/device_info.h"
#include "common/error.h"
#include "common/format_bytes.h"
#include "common/harness/workload_options.h"
#include "common/model_bundle.h"
#include "common/report.h"

namespace nanoserve::ch07 {
namespace {

struct Args {
  std::string model = default_model_spec();
  std::string dtype = "fp16";
  std::string kv_dtype;  // empty: the activation type
  StackWorkloadOptions workload;
  std::string user_len = "lognormal:12:0.8:2:48";
  std::string output_len = "lognormal:20:0.9:4:128";
  int kv_tokens = 512;  // KV budget of the dense model, in tokens: sets the memory budget
  StackSetup setup;
  StackConfig config;    // the single run's techniques
  bool no_continuous = false, no_paged = false, no_prefix_caching = false;
  std::string preemption = "auto";
  StackTableOptions table;
  std::string cost_device = "h200";
  bool tour = false;
  std::string json;
};

void print_header(const Args& a, const ModelBundle& b, const StackWorkload& w) {
  const ModelConfig& c = b.model.config;
  std::printf("ch07_full_stack: every technique in one continuous-batching engine\n");
  std::printf("  model    %s (dim %d, %d layers, vocab %d)%s\n", a.model.c_str(), c.dim,
              c.n_layers, c.vocab_size,
              b.format == ModelFormat::kSynthetic ? " — synthetic: random weights" : "");
  const std::string kv = a.kv_dtype.empty() ? a.dtype : a.kv_dtype;
  std::printf("  device   %s [%s backend], %s\n", engine::device_name().c_str(),
              engine::kernel_backend(),
              kv == a.dtype ? (a.dtype + " weights, activations and KV").c_str()
                            : (a.dtype + " weights and activations, " + kv + " KV").c_str());
  std::printf("  workload %s\n           text: %s\n", w.description.c_str(), w.source.c_str());
  std::printf("  memory   %s for weights + KV (the dense %s weights and %d tokens of KV); "
              "max_model_len %d, block %d, budget %d rows/pass, %d seqs\n",
              format_bytes(double(a.setup.memory_bytes)).c_str(), a.dtype.c_str(), a.kv_tokens,
              a.setup.max_model_len, a.setup.block_size, a.setup.max_num_batched_tokens,
              a.setup.max_num_seqs);
}

int run(Args& a, bool stack) {
  if (a.tour) {  // small enough for the expected-output test (~20 s on the simulator)
    stack = true;
    a.workload.num_requests = std::min(a.workload.num_requests, 8);
    a.workload.prefix_tokens = std::min(a.workload.prefix_tokens, 24);
    a.output_len = "lognormal:10:0.8:4:24";
    a.setup.max_model_len = std::min(a.setup.max_model_len, 128);  // every request fits 96
    a.kv_tokens = std::min(a.kv_tokens, 256);  // pressure: the dense paged pool preempts once
    a.table.eval_docs = std::min(a.table.eval_docs, 4);
  }
  a.workload.user_len = harness::parse_length_dist(a.user_len, "--user-len");
  a.workload.output_len = harness::parse_length_dist(a.output_len, "--output-len");
  const ModelBundle b = load_model_bundle(a.model);
  const std::string device_line = engine::device_name();  // a missing GPU: one clear error
  const DType dtype = parse_dtype(a.dtype);
  StackSetup& s = a.setup;
  s.bundle = &b;
  s.dtype = dtype;
  s.kv_dtype = a.kv_dtype.empty() ? dtype : parse_dtype(a.kv_dtype);
  s.max_model_len = std::min(s.max_model_len, b.model.config.max_seq_len);
  s.device = cli::cost_device(a.cost_device);
  const StackWorkload w = make_stack_workload(a.workload, b);
  s.calibration = calibration_for(b, w);
  WeightsCache weights(b.model, dtype, s.calibration);
  s.memory_bytes = weights.get("none").weight_bytes +
                   std::int64_t(a.kv_tokens) * b.model.config.kv_bytes_per_token(dtype_bytes(s.kv_dtype));
  print_header(a, b, w);
  nlohmann::json report = make_report("ch07_full_stack", engine::kernel_backend(), device_line);
  report["model"] = a.model;
  report["workload"] = w.description;
  roofline::Precision precision = roofline::Precision::dense(dtype_bytes(dtype));
  precision.kv_bytes = dtype_bytes(s.kv_dtype);
  report["cost_model"] = cli::cost_model_json(*s.device, precision);
  std::vector<StackRun> runs;
  if (stack) {
    for (const StackConfig& c : stacked_rows(a.table)) {
      std::fprintf(stderr, "ch07: running %s\n", c.label.c_str());
      runs.push_back(run_stack(s, c, weights, w.requests));
    }
  } else {
    StackConfig& c = a.config;
    c.continuous = !a.no_continuous;
    c.paged = !a.no_paged;
    c.prefix_caching = !a.no_prefix_caching && c.paged;
    c.preemption = engine::parse_preemption_mode(a.preemption);
    c.label = std::string(c.continuous ? "continuous" : "static") + (c.paged ? ", paged" : ", contiguous") +
              (c.quant != "none" ? ", " + c.quant : "") + (c.spec != "none" ? ", spec " + c.spec : "");
    runs.push_back(run_stack(s, c, weights, w.requests));
  }
  const std::vector<RowQuality> quality =
      row_quality(runs, weights, b, s.calibration, stack ? a.table.eval_docs : 0);
  print_stack(runs, quality, *s.device);
  if (!stack) {
    const StackRun& r = runs.front();
    std::printf("\n  %d requests in, %zu sequences out (parallel samples: n = %d); speculation: "
                "%lld of %lld drafts accepted; preemptions %lld (%lld by swapping, host pool %d "
                "blocks)\n", a.workload.num_requests, r.run.requests.size(), a.workload.samples,
                r.run.num_accepted_tokens, r.run.num_draft_tokens, r.run.num_preemptions,
                r.run.num_swap_outs, s.num_host_blocks);
  }
  report["records"] = stack_records(runs, quality);
  if (!a.json.empty()) write_json(a.json, report);
  return 0;
}

}  // namespace
}  // namespace nanoserve::ch07

int main(int argc, char** argv) {
  using nanoserve::ch07::Args;
  namespace cli = nanoserve::cli;
  Args a;
  CLI::App app{"Chapter 7: the whole stack in one engine (see chapters/ch07_full_stack/README.md)"};
  app.fallthrough();
  app.add_option("--model,-m", a.model, "model file, directory or synthetic:<name>")->capture_default_str();
  app.add_option("--dtype", a.dtype, "storage type of weights, activations and KV")
      ->capture_default_str()->check(CLI::IsMember({"fp32", "fp16", "bf16"}));
  app.add_option("--kv-dtype", a.kv_dtype, "storage type of the KV cache (default: --dtype)")
      ->check(CLI::IsMember({"fp32", "fp16", "bf16"}));
  app.add_option("--num-requests,-n", a.workload.num_requests, "requests")->capture_default_str()
      ->check(CLI::Range(1, 4096));
  app.add_option("--rate", a.workload.rate, "Poisson arrivals per second of modeled time (0 = all at t = 0)")
      ->capture_default_str()->check(cli::number_in(0, 1e9));
  app.add_option("--prefixes", a.workload.num_prefixes, "distinct shared openings")
      ->capture_default_str()->check(CLI::Range(1, 64));
  app.add_option("--prefix-tokens", a.workload.prefix_tokens, "tokens of each opening")
      ->capture_default_str()->check(CLI::Range(1, 4096));
  app.add_option("--user-len", a.user_len, "each request's own prompt tokens (fixed:N | uniform:LO:HI | "
                 "lognormal:MEDIAN:SIGMA:LO:HI)")->capture_default_str();
  app.add_option("--output-len", a.output_len, "max_tokens distribution (same forms)")->capture_default_str();
  app.add_option("--temperature,-t", a.workload.temperature, "sampling (0 = greedy)")
      ->capture_default_str()->check(cli::number_in(0, 100));
  app.add_option("--seed,-s", a.workload.seed, "workload seed (also keys each request's sampling)")
      ->capture_default_str()->check(cli::seed_range());
  app.add_option("--samples", a.workload.samples, "parallel samples per request (n, forked copy-on-write)")
      ->capture_default_str()->check(CLI::Range(1, 64));
  app.add_option("--kv-tokens", a.kv_tokens, "KV budget of the dense model in tokens: the memory budget "
                 "is its weights + this KV (smaller weights leave more KV)")
      ->capture_default_str()->check(CLI::Range(16, 1 << 22));
  app.add_option("--max-model-len", a.setup.max_model_len, "tokens per request (a contiguous region)")
      ->capture_default_str()->check(CLI::Range(8, 1 << 20));
  app.add_option("--max-num-seqs", a.setup.max_num_seqs, "running requests (paged)")
      ->capture_default_str()->check(CLI::Range(1, 4096));
  app.add_option("--max-num-batched-tokens", a.setup.max_num_batched_tokens, "rows per pass")
      ->capture_default_str()->check(CLI::Range(1, 16384));
  app.add_option("--block-size", a.setup.block_size, "tokens per paged KV block")
      ->capture_default_str()->check(CLI::Range(1, 4096));
  app.add_flag("--no-continuous", a.no_continuous, "static batching (chapter 3) instead");
  app.add_flag("--no-paged", a.no_paged, "contiguous KV: one max_model_len region per request");
  app.add_flag("--no-prefix-caching", a.no_prefix_caching, "do not reuse cached prompt blocks");
  app.add_option("--quant", a.config.quant, "none | int8-rtn | int4-rtn|gptq|awq[-gN] | FILE.nsqm")
      ->capture_default_str();
  app.add_option("--spec", a.config.spec, "none | ngram | layers-K (the target's first K blocks)")
      ->capture_default_str();
  app.add_option("--gamma", a.config.gamma, "draft tokens per step")->capture_default_str()
      ->check(CLI::Range(1, 16));
  app.add_option("--preemption", a.preemption, "recompute | swap | auto (vLLM v0: swap groups of samples)")
      ->capture_default_str()->check(CLI::IsMember({"recompute", "swap", "auto"}));
  app.add_option("--host-blocks", a.setup.num_host_blocks, "host pool for swapped-out KV, in blocks")
      ->capture_default_str()->check(CLI::Range(0, 1 << 20));
  cli::add_cost_device_flag(app, a.cost_device)->capture_default_str();
  app.add_option("--json", a.json, "also write every row as a JSON record to this path");
  app.add_flag("--tour", a.tour, "the stacked table on a small workload (scripts/tour.sh)");
  CLI::App* stack = app.add_subcommand("stack", "the stacked-gains table: one technique added per row");
  stack->add_option("--quants", a.table.quants, "the INT4 rows, each instead of the previous weights")
      ->capture_default_str()->delimiter(',');
  stack->add_option("--stack-spec", a.table.spec, "the speculation row's drafter (none: no row)")
      ->capture_default_str();
  stack->add_option("--eval-docs", a.table.eval_docs, "documents for perplexity (0: none)")
      ->capture_default_str()->check(CLI::Range(0, 79));
  app.require_subcommand(0, 1);
  return cli::run_program("ch07_full_stack", app, argc, argv, [&] {
    a.table.gamma = a.config.gamma;
    return nanoserve::ch07::run(a, stack->parsed());
  });
}
