// Chapter 1: from recomputation to a naive KV cache.
//
//   ch01_naive_kv_cache --model stories260K.bin --steps 48 --mode both --check
//   ch01_naive_kv_cache kv-memory --context 4096 --batch 16
//
// Generates text through the kernels twice — recomputing the whole prefix every step
// (no-cache), then with a contiguous KV cache (naive-cache) — and prints the per-step latency
// of both, the KV bytes per token of the model, how much of a naive cache's reservation a batch
// of mixed-length requests really uses, and the KV memory of real model shapes. README.md is the
// tutorial that walks through this file.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "chapters/ch01_naive_kv_cache/kv_tables.h"
#include "chapters/ch01_naive_kv_cache/modeled_steps.h"
#include "chapters/ch01_naive_kv_cache/step_probe.h"
#include "common/harness/clocks.h"
#include "common/engine/model/device_info.h"
#include "common/engine/model/check_tolerance.h"
#include "common/engine/model/device_model.h"
#include "common/engine/decode/naive_decoder.h"
#include "common/cli/cli_checks.h"
#include "common/cli/cost_device.h"
#include "common/cli/program.h"
#include "common/model_bundle.h"
#include "common/oracle/oracle_decoder.h"
#include "common/report.h"
#include "common/tolerances.h"

namespace nanoserve::ch01 {
namespace {

// The tour's prompt: long enough (~80 tokens) that recomputing it every step shows in the timings.
constexpr const char* kTourPrompt =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the "
    "park with her friends. One day, she saw a big tree with a red ball stuck in it. She";

struct Args {
  std::string model = default_model_spec();
  std::string tokenizer;
  std::string prompt = "Once upon a time";
  int steps = 48;
  std::string mode = "both";
  std::string dtype = nanoserve::engine::default_dtype();  // bf16 on a GPU build, fp32 in the simulator
  std::string kv_dtype;  // empty: --dtype
  int max_seq_len = 0;
  float temperature = 0.0f;
  std::uint64_t seed = 42;
  bool check = false;
  bool tour = false;
  std::string cost_device;  // --cost-device: the roofline model of every step on that GPU
  std::string json;
  int kv_context = 4096;  // kv-memory subcommand
  int kv_batch = 16;
};

// The tolerance --check applies: engine::check_tolerance (activations' and KV's types).
using engine::check_tolerance;

struct ModeRun {
  engine::CacheMode mode;
  GenerateResult result;
  std::vector<StepRecord> steps;
  bool check_ok = true;
  std::string failure;
  std::int64_t kv_reserved = 0;  // the engine's own accounting at the end of the run
  std::int64_t kv_used = 0;
  int kv_positions = 0;
};

ModeRun run_mode(const engine::DeviceModel& dm, const Model& oracle_model, engine::CacheMode mode,
                 const std::vector<int>& prompt, const Args& a) {
  const DType kv = a.kv_dtype.empty() ? dm.dtype() : parse_dtype(a.kv_dtype);
  engine::NaiveDecoder backend(dm, mode, a.max_seq_len, dm.dtype(), kv);
  std::unique_ptr<oracle::OracleDecoder> oracle;
  // The oracle holds what the run needs (its tables are not this chapter's subject).
  const int needed = static_cast<int>(std::min<std::int64_t>(
      oracle_model.config.max_seq_len, std::int64_t(prompt.size()) + a.steps));
  if (a.check) oracle = std::make_unique<oracle::OracleDecoder>(oracle_model, needed);
  StepProbe probe(backend, oracle.get(), check_tolerance(dm.dtype(), kv));
  GenerateOptions opt;
  opt.max_new_tokens = a.steps;
  opt.sampling.temperature = a.temperature;
  opt.sampling.seed = a.seed;
  ModeRun run{mode, generate(probe, prompt, opt), probe.steps(), probe.check_ok(),
              probe.first_failure()};
  run.kv_reserved = backend.cache().regions().reserved_bytes();
  run.kv_used = backend.cache().regions().used_bytes();
  run.kv_positions = backend.cache().length(backend.region());
  return run;
}

// Per-step latency, both modes side by side; long runs print every k-th step (JSON has all).
void print_latency(const std::vector<ModeRun>& runs, bool check, nlohmann::json& records) {
  if (runs.front().steps.empty()) {
    std::printf("\n(no forward pass ran: with --steps 0 the prompt is the whole output)\n");
    return;
  }
  std::printf("\n== per-step latency (ms of %s; %s) ==\n", harness::step_clock_name(),
              std::string(engine::kernel_backend()) == "sim"
                  ? "CPU-simulator timings: they show the trend, not GPU speed"
                  : "logits copied to the host");
  std::printf("  %5s %8s", "step", "position");
  for (const ModeRun& r : runs) {
    std::printf(" | %-11s %6s %9s", engine::to_string(r.mode), "rows", "ms");
    if (check) std::printf(" %10s", "max|dlogit|");
  }
  std::printf("\n");
  const std::size_t n = runs.front().steps.size();
  const std::size_t every = std::max<std::size_t>(1, (n + 15) / 16);
  for (std::size_t i = 0; i < n; ++i) {
    const bool shown = i % every == 0 || i + 1 == n;
    if (shown) std::printf("  %5zu %8d", i, runs.front().steps[i].position);
    for (const ModeRun& r : runs) {
      const StepRecord& s = r.steps[i];
      if (shown) {
        std::printf(" | %-11s %6lld %9.2f", "", s.rows, s.ms);
        if (check) std::printf(" %10.2e", s.max_abs_diff);
      }
      records.push_back({{"table", "latency"}, {"mode", engine::to_string(r.mode)},
                         {"step", s.step}, {"position", s.position}, {"rows", s.rows},
                         {"ms", s.ms}, {"max_abs_logit_diff", s.max_abs_diff}});
    }
    if (shown) std::printf("\n");
  }
  for (const ModeRun& r : runs) {
    double decode_ms = 0;
    long long rows = 0;
    for (std::size_t i = 0; i < r.steps.size(); ++i) {
      if (i > 0) decode_ms += r.steps[i].ms;
      rows += r.steps[i].rows;
    }
    const int decoded = static_cast<int>(r.steps.size()) - 1;
    std::printf("  %-11s prefill %.2f ms, %d decode steps in %.1f ms (%.1f tok/s), %lld rows computed\n",
                engine::to_string(r.mode), r.steps.front().ms, decoded, decode_ms,
                decode_ms > 0 ? 1e3 * decoded / decode_ms : 0.0, rows);
  }
}

int run(const Args& a) {
  const ModelBundle b = load_model_bundle(a.model, a.tokenizer);
  const Tokenizer& tok = *b.tokenizer;
  const ModelConfig& c = b.model.config;
  const DType dtype = parse_dtype(a.dtype);
  const DType kv_dtype = a.kv_dtype.empty() ? dtype : parse_dtype(a.kv_dtype);
  const std::string device = engine::device_name();  // first: a missing GPU is one clear error
  const roofline::Device* cost_device = cli::cost_device(a.cost_device);
  const engine::DeviceModel dm(b.model, dtype);
  const Model oracle_model = engine::round_weights(b.model, dtype);  // what the device computes with
  const int max_seq_len = a.max_seq_len == 0 ? c.max_seq_len : a.max_seq_len;
  // The naive slot reserves all of max_seq_len up front — the waste this chapter measures — so
  // a context the file claims (up to 2^20 positions) is checked against the device first.
  engine::check_device_memory(double(max_seq_len) * double(c.kv_bytes_per_token(dtype_bytes(kv_dtype))),
                              "the naive KV slot of " + std::to_string(max_seq_len) +
                                  " positions (--max-seq-len; 0 = the model's context)");
  const std::string model_name = c.name.substr(c.name.find_last_of('/') + 1);  // file name only

  std::printf("ch01_naive_kv_cache: from recomputation to a naive KV cache\n");
  std::printf("  model   %s (dim %d, %d layers, %d heads / %d KV heads, head_dim %d, context %d)%s\n",
              model_name.c_str(), c.dim, c.n_layers, c.n_heads, c.n_kv_heads, c.head_dim,
              c.max_seq_len,
              b.format == ModelFormat::kSynthetic ? "\n          synthetic: random weights, meaningless text" : "");
  std::printf("  device  %s [%s backend]\n  weights %s, %s on the device\n", device.c_str(),
              engine::kernel_backend(), dtype_name(dtype),
              format_bytes(dm.weight_bytes()).c_str());
  if (kv_dtype != dtype) std::printf("  KV cache %s (activations %s)\n", dtype_name(kv_dtype), dtype_name(dtype));

  nlohmann::json report = make_report("ch01_naive_kv_cache", engine::kernel_backend(), device);
  report["step_clock"] = harness::step_clock_name();
  nlohmann::json& records = report["records"];
  const std::vector<int> prompt = tok.encode(a.prompt, /*add_bos=*/true, /*add_eos=*/false);

  std::vector<ModeRun> runs;
  if (a.mode != "naive-cache") runs.push_back(run_mode(dm, oracle_model, engine::CacheMode::kNoCache, prompt, a));
  if (a.mode != "no-cache") runs.push_back(run_mode(dm, oracle_model, engine::CacheMode::kNaiveCache, prompt, a));
  const GenerateResult& shown = runs.back().result;
  std::printf("\n== generated text (%s, %s, %d prompt tokens + %d generated, stop: %s) ==\n%s\n",
              engine::to_string(runs.back().mode), a.temperature == 0 ? "greedy" : "sampled",
              shown.prompt_tokens, shown.generated(), to_string(shown.stop),
              tok.decode(shown.tokens).c_str());
  bool ok = true;
  if (runs.size() == 2) {
    const bool same = runs[0].result.tokens == runs[1].result.tokens;
    std::printf("no-cache and naive-cache generated the same tokens: %s\n", same ? "yes" : "NO");
    ok = ok && same;
  }
  print_latency(runs, a.check, records);
  if (cost_device != nullptr) {
    std::vector<ModeSteps> modes;
    for (const ModeRun& r : runs) modes.emplace_back(engine::to_string(r.mode), &r.steps);
    print_modeled_steps(c, dtype_bytes(dtype), modes, *cost_device, records);
    report["cost_model"] = cli::cost_model_json(*cost_device, roofline::Precision::dense(dtype_bytes(dtype)));
  }
  if (a.check) {
    const Tolerance t = check_tolerance(dtype, kv_dtype);
    for (const ModeRun& r : runs) {
      std::printf("  check %-11s vs CPU oracle (same %s weights, fp32 KV): %s (tolerance atol %g, rtol %g)%s%s\n",
                  engine::to_string(r.mode), dtype_name(dtype), r.check_ok ? "OK" : "FAILED",
                  t.atol, t.rtol, r.check_ok ? "" : " — ", r.failure.c_str());
      ok = ok && r.check_ok;
    }
  }

  // Memory: what this model's KV costs, and what a naive reservation wastes.
  print_kv_per_token(c, dtype_bytes(kv_dtype), max_seq_len, records);
  for (const ModeRun& r : runs) {
    if (r.mode != engine::CacheMode::kNaiveCache) continue;
    std::printf("  this run's request: %d positions cached, %s used of %s reserved (%.1f%%)\n",
                r.kv_positions, format_bytes(r.kv_used).c_str(), format_bytes(r.kv_reserved).c_str(),
                100.0 * double(r.kv_used) / double(r.kv_reserved));
  }
  const std::vector<harness::RequestShape> batch = harness::mixed_length_requests();
  int longest = 0;
  for (const harness::RequestShape& r : batch) longest = std::max(longest, r.cached_positions());
  if (longest <= max_seq_len) {
    print_utilization(replay_utilization(batch, max_seq_len, c.kv_bytes_per_token(dtype_bytes(kv_dtype))),
                      max_seq_len, records);
  } else {
    std::printf("\n(reserved vs used: the mixed batch needs regions of %d positions; "
                "--max-seq-len %d is too small, table skipped)\n", longest, max_seq_len);
  }
  print_kv_memory(engine::kv_memory_reference_models(), a.kv_context, a.kv_batch, records);

  for (const ModeRun& r : runs) {
    records.push_back({{"table", "generation"}, {"mode", engine::to_string(r.mode)},
                       {"model", model_name}, {"dtype", dtype_name(dtype)},
                       {"kv_dtype", dtype_name(kv_dtype)},
                       {"prompt_tokens", r.result.prompt_tokens},
                       {"generated_tokens", r.result.generated()}, {"tokens", r.result.tokens},
                       {"check_ok", r.check_ok}});
  }
  if (!a.json.empty()) write_json(a.json, report);
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace nanoserve::ch01

int main(int argc, char** argv) {
  using nanoserve::ch01::Args;
  Args a;
  CLI::App app{"Chapter 1: from recomputation to a naive KV cache (see chapters/ch01_naive_kv_cache/README.md)"};
  app.add_option("--model,-m", a.model, "model file, directory or synthetic:<name>")->capture_default_str();
  app.add_option("--tokenizer,-z", a.tokenizer, "tokenizer file (default: found from the model)");
  app.add_option("--prompt,-p", a.prompt, "prompt text (BOS is prepended)")->capture_default_str();
  app.add_option("--steps,-n", a.steps, "tokens to generate")->capture_default_str()->check(CLI::Range(0, 1 << 20));
  app.add_option("--mode", a.mode, "which decoding to run")->capture_default_str()
      ->check(CLI::IsMember({"no-cache", "naive-cache", "both"}));
  app.add_option("--dtype", a.dtype, "storage type of weights and activations (--tour: fp32 unless given)")->capture_default_str()
      ->check(CLI::IsMember({"fp32", "fp16", "bf16"}));
  app.add_option("--kv-dtype", a.kv_dtype, "storage type of the KV cache (default: --dtype)")
      ->check(CLI::IsMember({"fp32", "fp16", "bf16"}));
  app.add_option("--max-seq-len", a.max_seq_len, "positions one KV region reserves; 0 = the model's context")
      ->capture_default_str()->check(CLI::Range(0, 1 << 20));
  app.add_option("--temperature,-t", a.temperature, "0 = greedy")->capture_default_str()
      ->check(nanoserve::cli::number_in(0, 100));
  app.add_option("--seed,-s", a.seed, "the request's RNG seed (used when temperature > 0)")->capture_default_str()
      ->check(nanoserve::cli::seed_range());
  app.add_flag("--check", a.check, "run the CPU oracle alongside and compare every step's logits");
  nanoserve::cli::add_cost_device_flag(app, a.cost_device);
  app.add_option("--json", a.json, "also write every table as JSON records to this path");
  app.add_flag("--tour", a.tour, "a short run for scripts/tour.sh: --steps 16 --check, a longer prompt");
  CLI::App* kv = app.add_subcommand("kv-memory", "KV cache memory of real model shapes (no model is loaded)");
  kv->add_option("--context", a.kv_context, "positions per request")->capture_default_str()
      ->check(CLI::Range(1, 1 << 24));
  kv->add_option("--batch", a.kv_batch, "requests held at once")->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  kv->add_option("--json", a.json, "also write the table as JSON to this path");
  return nanoserve::cli::run_program("ch01_naive_kv_cache", app, argc, argv, [&] {
    if (kv->parsed()) {
      nlohmann::json report = nanoserve::make_report("ch01_naive_kv_cache kv-memory", "host", "host arithmetic");
      nanoserve::ch01::print_kv_memory(nanoserve::engine::kv_memory_reference_models(), a.kv_context,
                                       a.kv_batch, report["records"]);
      if (!a.json.empty()) nanoserve::write_json(a.json, report);
      return 0;
    }
    if (a.tour && app.count("--dtype") == 0) a.dtype = "fp32";  // tours: the exact mode
    if (a.tour) {  // a longer prompt, so recomputing it every step visibly costs more
      a.steps = std::min(a.steps, 16);
      a.check = true;
      if (app.count("--prompt") == 0) a.prompt = nanoserve::ch01::kTourPrompt;
    }
    return nanoserve::ch01::run(a);
  });
}
