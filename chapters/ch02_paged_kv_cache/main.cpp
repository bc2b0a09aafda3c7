// Chapter 2: paged KV cache, PagedAttention and prefix caching.
//
//   ch02_paged_kv_cache --tour                         all three scenarios, quickly
//   ch02_paged_kv_cache utilization --block-size 16    naive vs paged KV under one budget
//   ch02_paged_kv_cache multiturn --new-tokens 8       chats, prefix caching off vs on
//   ch02_paged_kv_cache parallel-sampling -n 4         n samples, shared vs unshared prompt KV
//
// Each scenario prints a table and appends records to the `--json` report. README.md is the
// tutorial that walks through this program and the engine code under it.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "chapters/ch02_paged_kv_cache/chat_script.h"
#include "common/format_bytes.h"
#include "common/harness/clocks.h"
#include "chapters/ch02_paged_kv_cache/modeled_multiturn.h"
#include "chapters/ch02_paged_kv_cache/multiturn.h"
#include "chapters/ch02_paged_kv_cache/parallel_sampling.h"
#include "chapters/ch02_paged_kv_cache/served_utilization.h"
#include "chapters/ch02_paged_kv_cache/utilization.h"
#include "common/data_path.h"
#include "common/eval/documents.h"
#include "common/quant/calibration.h"
#include "common/engine/model/device_info.h"
#include "common/engine/model/device_model.h"
#include "common/cli/cli_checks.h"
#include "common/cli/cost_device.h"
#include "common/cli/program.h"
#include "common/model_bundle.h"
#include "common/report.h"

namespace nanoserve::ch02 {
namespace {

// The parallel-sampling prompt: a story opening the tiny story models continue well.
constexpr const char* kSamplingPrompt =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the "
    "park with her friends. One day, she saw a big tree with a red ball stuck in it.";

struct Args {
  std::string model = default_model_spec();
  std::string tokenizer;
  std::string dtype = nanoserve::engine::default_dtype();  // bf16 on a GPU build, fp32 in the simulator
  std::string kv_dtype;  // empty: --dtype
  int block_size = 16;
  std::string json;
  bool tour = false;
  // utilization
  int max_seq_len = 0;
  int regions = 8;
  std::vector<int> sweep = {1, 4, 8, 16, 32, 64, 128};
  bool serve = false;
  int serve_tokens = 0;
  std::string cost_device;  // --cost-device: multiturn's turns modeled on that GPU
  // multiturn
  std::string chats;
  int turn_tokens = 8;
  int max_turns = 0;
  int max_sessions = 0;
  int num_blocks = 1024;
  // parallel-sampling
  int n = 4;
  int sample_tokens = 24;
  float temperature = 0.8f;
  float top_p = 0.95f;
  std::uint64_t seed = 42;
  std::string prompt = kSamplingPrompt;
};

struct Scenarios {
  bool utilization = false, multiturn = false, sampling = false;
};

// The KV cache's storage type: --kv-dtype, or the model's (--dtype) when it is not given.
DType kv_dtype_of(const Args& a, const engine::DeviceModel& dm) {
  return a.kv_dtype.empty() ? dm.dtype() : parse_dtype(a.kv_dtype);
}

void run_utilization(const ModelBundle& b, const engine::DeviceModel& dm, const Args& a,
                     nlohmann::json& records) {
  const ModelConfig& c = b.model.config;
  UtilizationConfig u;
  u.max_seq_len = a.max_seq_len == 0 ? c.max_seq_len : a.max_seq_len;
  u.regions = a.regions;
  u.block_size = a.block_size;
  u.bytes_per_token = c.kv_bytes_per_token(dtype_bytes(kv_dtype_of(a, dm)));
  // The replay admits requests until the budget is full, so its host memory follows the budget:
  // a stated limit, rather than a context of 2^20 positions from a file times --regions.
  constexpr std::int64_t kMaxBudgetPositions = 1 << 22;
  if (std::int64_t(u.regions) * u.max_seq_len > kMaxBudgetPositions) {
    throw InvalidArgument("utilization: --regions " + std::to_string(u.regions) + " x max_seq_len " +
                          std::to_string(u.max_seq_len) +
                          (a.max_seq_len == 0 ? " (the model's context)" : "") +
                          " exceeds the replay's budget limit of 4194304 positions; pass a smaller "
                          "--max-seq-len or --regions");
  }
  const std::vector<harness::RequestShape> batch = harness::mixed_length_requests();
  print_utilization(replay_utilization(batch, u), batch, u, records);
  print_block_size_sweep(batch, u, a.sweep, records);
  if (!a.serve) return;
  ServedConfig served;
  served.temperature = a.temperature;
  served.seed = a.seed;
  served.stop_tokens = {b.tokenizer->eos_id(), b.tokenizer->bos_id()};
  served.max_new_tokens = a.serve_tokens;
  served.kv_dtype = kv_dtype_of(a, dm);
  // Real stories as prompts when there is a real model and the text sample (its stories end
  // with EOS, so the outputs have the model's lengths); otherwise synthetic prompts.
  const auto sample = find_data_file("tinystories_valid_sample.txt");
  if (sample && b.format != ModelFormat::kSynthetic) {
    const std::string text =
        quant::select_documents(eval::read_text_file(*sample), {1, int(batch.size())});
    for (const auto& doc : eval::split_documents(text, eval::kDefaultDelimiter)) {
      served.prompts.push_back(b.tokenizer->encode(std::string(doc), true, false));
    }
    served.prompt_source = "the openings of stories 1.." + std::to_string(batch.size()) +
                           " of the text sample";
  }
  std::fprintf(stderr, "utilization: serving the mix on the model ...\n");
  print_served_utilization(serve_utilization(dm, batch, u, served), u, served, records);
}

bool run_multiturn_scenario(const ModelBundle& b, const engine::DeviceModel& dm, const Args& a,
                            nlohmann::json& records) {
  const std::string path = a.chats.empty() ? default_chat_script_path() : a.chats;
  const ChatScript script = load_chat_script(path);
  MultiturnConfig m;
  m.block_size = a.block_size;
  m.num_blocks = a.num_blocks;
  m.max_new_tokens = a.turn_tokens;
  m.max_turns = a.max_turns;
  m.max_sessions = a.max_sessions;
  m.kv_dtype = kv_dtype_of(a, dm);
  const std::string file = path.substr(path.find_last_of('/') + 1);
  std::fprintf(stderr, "multiturn: %s, prefix caching off ...\n", file.c_str());
  const MultiturnRun off = run_multiturn(dm, *b.tokenizer, script, m, false);
  std::fprintf(stderr, "multiturn: %s, prefix caching on ...\n", file.c_str());
  const MultiturnRun on = run_multiturn(dm, *b.tokenizer, script, m, true);
  const bool same = print_multiturn(off, on, m, records);
  if (!a.cost_device.empty()) {
    print_modeled_multiturn(b.model.config, dtype_bytes(dm.dtype()), off, on,
                            *cli::cost_device(a.cost_device), records);
  }
  if (!on.turns.empty()) {  // one exchange, to show what the model made of it
    const TurnRecord& t = on.turns.back();
    std::printf("  last reply (session '%s', turn %d): \"%s\"\n", t.session.c_str(), t.turn,
                b.tokenizer->decode(t.reply).c_str());
  }
  return same;
}

bool run_sampling_scenario(const ModelBundle& b, const engine::DeviceModel& dm, const Args& a,
                           nlohmann::json& records) {
  ParallelSamplingConfig p;
  p.n = a.n;
  p.max_new_tokens = a.sample_tokens;
  p.block_size = a.block_size;
  p.num_blocks = a.num_blocks;
  p.temperature = a.temperature;
  p.kv_dtype = kv_dtype_of(a, dm);
  p.top_p = a.top_p;
  p.seed = a.seed;
  p.stop_tokens = {b.tokenizer->eos_id(), b.tokenizer->bos_id()};
  const std::vector<int> prompt = b.tokenizer->encode(a.prompt, /*add_bos=*/true, false);
  std::fprintf(stderr, "parallel-sampling: n = %d, unshared and shared ...\n", p.n);
  const ParallelSamplingRun unshared = run_parallel_sampling(dm, prompt, p, false);
  const ParallelSamplingRun shared = run_parallel_sampling(dm, prompt, p, true);
  const std::int64_t bytes_per_block =
      std::int64_t(a.block_size) * b.model.config.kv_bytes_per_token(dtype_bytes(kv_dtype_of(a, dm)));
  const bool same = print_parallel_sampling(unshared, shared, p, int(prompt.size()),
                                            bytes_per_block, records);
  for (std::size_t i = 0; i < shared.samples.size() && i < 2; ++i) {
    std::printf("  sample %zu (seed %llu): \"...%s\"\n", i,
                static_cast<unsigned long long>(p.seed + i),
                b.tokenizer->decode(shared.samples[i]).c_str());
  }
  return same;
}

int run(const Args& a, Scenarios s) {
  const ModelBundle b = load_model_bundle(a.model, a.tokenizer);
  const ModelConfig& c = b.model.config;
  const DType dtype = parse_dtype(a.dtype);
  const std::string device = engine::device_name();  // first: a missing GPU is one clear error
  const engine::DeviceModel dm(b.model, dtype);
  const DType kv_dtype = kv_dtype_of(a, dm);
  const std::string model_name = c.name.substr(c.name.find_last_of('/') + 1);

  std::printf("ch02_paged_kv_cache: paged KV cache, PagedAttention and prefix caching\n");
  std::printf("  model   %s (dim %d, %d layers, %d KV heads, head_dim %d, context %d)%s\n",
              model_name.c_str(), c.dim, c.n_layers, c.n_kv_heads, c.head_dim, c.max_seq_len,
              b.format == ModelFormat::kSynthetic ? "\n          synthetic: random weights, meaningless text" : "");
  std::printf("  device  %s [%s backend]\n  KV      %s, %s per token, blocks of %d positions\n",
              device.c_str(), engine::kernel_backend(), dtype_name(kv_dtype),
              format_bytes(c.kv_bytes_per_token(dtype_bytes(kv_dtype))).c_str(), a.block_size);
  if (kv_dtype != dtype) std::printf("  weights and activations %s\n", dtype_name(dtype));

  nlohmann::json report = make_report("ch02_paged_kv_cache", engine::kernel_backend(), device);
  report["model"] = model_name;
  report["clock"] = "process CPU time and wall time";
  nlohmann::json& records = report["records"];
  if (const roofline::Device* d = cli::cost_device(a.cost_device)) {
    report["cost_model"] = cli::cost_model_json(*d, roofline::Precision::dense(dtype_bytes(dtype)));
  }
  bool ok = true;
  if (s.multiturn || s.sampling) {
    engine::check_device_memory(double(a.num_blocks) * a.block_size *
                                    double(c.kv_bytes_per_token(dtype_bytes(kv_dtype))),
                                "the KV pool of --num-blocks " + std::to_string(a.num_blocks) +
                                    " x --block-size " + std::to_string(a.block_size));
  }
  if (s.utilization) run_utilization(b, dm, a, records);
  if (s.multiturn) ok = run_multiturn_scenario(b, dm, a, records) && ok;
  if (s.sampling) ok = run_sampling_scenario(b, dm, a, records) && ok;
  if (std::string(engine::kernel_backend()) == "sim" && (s.multiturn || s.sampling)) {
    std::printf("\n(CPU s: CPU time of the CUDA simulator — it shows work saved, not GPU speed)\n");
  }
  if (!a.json.empty()) write_json(a.json, report);
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace nanoserve::ch02

int main(int argc, char** argv) {
  using nanoserve::ch02::Args;
  Args a;
  CLI::App app{"Chapter 2: paged KV cache, PagedAttention and prefix caching "
               "(see chapters/ch02_paged_kv_cache/README.md). Without a subcommand, all three "
               "scenarios run."};
  app.fallthrough();  // the shared flags may also follow the subcommand
  app.add_option("--model,-m", a.model, "model file, directory or synthetic:<name>")->capture_default_str();
  app.add_option("--tokenizer,-z", a.tokenizer, "tokenizer file (default: found from the model)");
  app.add_option("--dtype", a.dtype, "storage type of weights and activations (--tour: fp32 unless given)")->capture_default_str()
      ->check(CLI::IsMember({"fp32", "fp16", "bf16"}));
  app.add_option("--kv-dtype", a.kv_dtype, "storage type of the KV cache (default: --dtype)")
      ->check(CLI::IsMember({"fp32", "fp16", "bf16"}));
  app.add_option("--block-size", a.block_size, "positions per KV block")->capture_default_str()
      ->check(CLI::Range(1, 4096));
  app.add_option("--num-blocks", a.num_blocks, "KV blocks in the pool (multiturn, parallel-sampling)")
      ->capture_default_str()->check(CLI::Range(1, 1 << 20));
  nanoserve::cli::add_cost_device_flag(app, a.cost_device);
  app.add_option("--json", a.json, "also write every table as JSON records to this path");
  app.add_flag("--tour", a.tour, "a short run of all three scenarios for scripts/tour.sh");
  CLI::App* util = app.add_subcommand("utilization", "naive vs paged KV utilization under one budget");
  util->add_option("--max-seq-len", a.max_seq_len, "positions a naive region reserves; 0 = the model's context")
      ->capture_default_str()->check(CLI::Range(0, 1 << 20));
  util->add_option("--regions", a.regions, "naive regions; the budget is regions x max-seq-len positions")
      ->capture_default_str()->check(CLI::Range(1, 1 << 16));
  util->add_option("--sweep", a.sweep, "block sizes of the sweep")->capture_default_str()
      ->check(CLI::Range(1, 4096));
  util->add_flag("--serve", a.serve,
                 "also serve the mix's prompts on the model until EOS and measure the live cache "
                 "(runs the model: slow on the simulator)");
  util->add_option("--serve-tokens", a.serve_tokens, "cap on each served output; 0 = the context")
      ->capture_default_str()->check(CLI::Range(0, 1 << 20));
  CLI::App* multi = app.add_subcommand("multiturn", "chat sessions, prefix caching off vs on");
  multi->add_option("--chats", a.chats, "chat script (default: data/chats/chats.txt)");
  multi->add_option("--new-tokens", a.turn_tokens, "greedy tokens per reply")->capture_default_str()
      ->check(CLI::Range(1, 256));
  multi->add_option("--turns", a.max_turns, "turns per session; 0 = all")->capture_default_str()
      ->check(CLI::Range(0, 1 << 20));
  multi->add_option("--sessions", a.max_sessions, "sessions; 0 = all")->capture_default_str()
      ->check(CLI::Range(0, 1 << 20));
  CLI::App* samp = app.add_subcommand("parallel-sampling", "n samples, shared vs unshared prompt KV");
  samp->add_option("-n", a.n, "samples of the prompt")->capture_default_str()->check(CLI::Range(1, 64));
  samp->add_option("--new-tokens", a.sample_tokens, "tokens per sample")->capture_default_str()
      ->check(CLI::Range(1, 256));
  samp->add_option("--temperature,-t", a.temperature, "> 0")->capture_default_str()
      ->check(nanoserve::cli::number_in(0, 100, /*open_low=*/true));
  samp->add_option("--top-p", a.top_p, "nucleus sampling, in (0, 1]")->capture_default_str()
      ->check(nanoserve::cli::number_in(0, 1, /*open_low=*/true));
  samp->add_option("--seed,-s", a.seed, "sample i uses seed + i")->capture_default_str()
      ->check(nanoserve::cli::seed_range());
  samp->add_option("--prompt,-p", a.prompt, "prompt text (BOS is prepended)");
  app.require_subcommand(0, 1);
  return nanoserve::cli::run_program("ch02_paged_kv_cache", app, argc, argv, [&] {
    nanoserve::ch02::Scenarios s{util->parsed(), multi->parsed(), samp->parsed()};
    if (!s.utilization && !s.multiturn && !s.sampling) s = {true, true, true};
    if (a.tour && app.count("--dtype") == 0) a.dtype = "fp32";  // tours: the exact mode
    if (a.tour) {  // small enough for the tour: two sessions, short replies and samples
      if (multi->count("--turns") == 0) a.max_turns = 6;
      if (multi->count("--sessions") == 0) a.max_sessions = 2;
      if (multi->count("--new-tokens") == 0) a.turn_tokens = 4;
      if (samp->count("--new-tokens") == 0) a.sample_tokens = 12;
    }
    return nanoserve::ch02::run(a, s);
  });
}
