// Chapter 6: speculative decoding.
//
//   ch06_speculative_decoding --model stories260K.bin --gammas 1,2,4,8 --json ch06.json
//   ch06_speculative_decoding --tour
//
// A target model (fp32, through the kernels over its own paged KV cache) and, for each draft —
// the target's first k layers, its INT8/INT4 copies (RTN, GPTQ, AWQ), prompt lookup — and each
// γ: the acceptance rate α, tokens per target forward, the measured draft/target cost ratio c,
// the measured speedup over plain decoding through the same kernels, and the speedup the paper
// predicts from α and c; greedy and sampled, plus the two cases where it stops paying (a high
// temperature, short replies). README.md is the tutorial that walks through this file.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "chapters/ch06_speculative_decoding/spec_inputs.h"
#include "common/engine/model/device_info.h"
#include "chapters/ch06_speculative_decoding/draft_factory.h"
#include "chapters/ch06_speculative_decoding/spec_roofline.h"
#include "common/cli/cli_checks.h"
#include "common/cli/cost_device.h"
#include "common/cli/program.h"
#include "common/model_bundle.h"
#include "common/report.h"
#include "chapters/ch06_speculative_decoding/spec_sweep.h"

namespace nanoserve::ch06 {
namespace {

struct Args {
  std::string model = default_model_spec();
  std::string drafts;             // comma-separated; empty = default_draft_names
  std::vector<int> gammas{1, 2, 3, 4, 5, 6, 7, 8};
  int tokens = 32;                // new tokens per request
  int prompts = 2;                // prompts from the text sample
  int prompt_tokens = 24;         // tokens per prompt (BOS included)
  float temperature = 1.0f;       // the sampled case
  std::uint64_t seed = 42;
  int repeats = 1;
  bool warnings = true;
  bool oracle = false;
  std::string dtype = nanoserve::engine::default_dtype();  // bf16 on a GPU build, fp32 in the simulator
  std::string kv_dtype;        // empty: --dtype
  bool tour = false;
  std::string cost_device;        // --cost-device: c and verify from the roofline model too
  std::string json;
};

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at <= s.size()) {
    const std::size_t comma = std::min(s.find(',', at), s.size());
    if (comma > at) out.push_back(s.substr(at, comma - at));
    at = comma + 1;
  }
  return out;
}

ch06::SweepCase make_case(const std::string& label, int tokens, float temperature,
                          std::uint64_t seed) {
  ch06::SweepCase c;
  c.label = label;
  c.options.max_new_tokens = tokens;
  c.options.sampling.temperature = temperature;
  c.options.sampling.seed = seed;
  return c;
}

void print_rows(const char* title, const std::vector<ch06::SweepRow>& rows) {
  std::printf("\n== %s ==\n%s", title, ch06::format_sweep_table(rows).c_str());
}

std::string format_number(float x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", double(x));
  return buf;
}

int run(Args a) {
  const ModelBundle b = load_model_bundle(a.model);
  const Model& target = b.model;
  if (a.tour && a.drafts.empty()) {  // one draft of each kind
    a.drafts = "layers-" + std::to_string(std::max(1, target.config.n_layers / 2)) + ",int8-rtn,ngram";
  }
  const std::string device = engine::device_name();  // first: a missing GPU is one clear error
  const SpecInputs in = spec_inputs(b, a.prompts, a.prompt_tokens);
  const std::vector<std::string> names =
      a.drafts.empty() ? ch06::default_draft_names(target.config.n_layers) : split_list(a.drafts);
  std::vector<ch06::DraftSpec> specs;  // parsed before anything runs: a typo fails at once
  for (const std::string& n : names) specs.push_back(ch06::parse_draft_spec(n));
  for (int g : a.gammas) {
    if (g < 1 || g > 63) throw InvalidArgument("--gammas: " + std::to_string(g) + " is outside [1, 63]");
  }

  const std::string model_name = target.config.name.substr(target.config.name.find_last_of('/') + 1);
  std::printf("ch06_speculative_decoding: draft, verify, accept or resample\n");
  std::printf("  model    %s (dim %d, %d layers, vocab %d)%s\n", model_name.c_str(), target.config.dim,
              target.config.n_layers, target.config.vocab_size,
              b.format == ModelFormat::kSynthetic ? "\n           synthetic: random weights, meaningless text" : "");
  const DType dtype = parse_dtype(a.dtype);
  const DType kv_dtype = a.kv_dtype.empty() ? dtype : parse_dtype(a.kv_dtype);
  std::printf("  device   %s [%s backend]; target %s through the kernels, paged KV%s%s\n",
              device.c_str(), engine::kernel_backend(), dtype_name(dtype),
              kv_dtype == dtype ? "" : " ", kv_dtype == dtype ? "" : dtype_name(kv_dtype));
  std::printf("  prompts  %zu x %d tokens from %s; %d new tokens each\n", in.prompts.size(),
              a.prompt_tokens, in.source.c_str(), a.tokens);

  // 16-token blocks holding what a request needs (prompt, new tokens, one round's overshoot),
  // not the context the model's file claims.
  engine::PagedDecoderOptions cache_options;
  cache_options.kv_dtype = kv_dtype;
  cache_options.max_seq_len = static_cast<int>(std::min<std::int64_t>(
      target.config.max_seq_len, std::int64_t(a.prompt_tokens) + a.tokens +
                                     *std::max_element(a.gammas.begin(), a.gammas.end()) + 1));
  engine::PagedDecoder target_backend(std::make_unique<engine::DeviceModel>(target, dtype),
                                        cache_options);
  const double target_bytes = double(target_backend.device_model().weight_bytes());

  std::vector<ch06::SweepCase> cases{make_case("greedy", a.tokens, 0.0f, a.seed),
                                     make_case("T=" + format_number(a.temperature), a.tokens,
                                               a.temperature, a.seed)};
  std::vector<ch06::SweepCase> warning_cases{make_case("T=2", a.tokens, 2.0f, a.seed),
                                             make_case("short", 4, 0.0f, a.seed)};
  const int warning_gamma = 4;

  nlohmann::json report = make_report("ch06_speculative_decoding", engine::kernel_backend(), device);
  report["model"] = model_name;
  report["prompts"] = in.source;
  nlohmann::json& records = report["records"];
  // --cost-device: the same α with c and verify costs modeled on that GPU, in the precision run
  // here, every sequence at mid-request context.
  const roofline::Device* cost_device = cli::cost_device(a.cost_device);
  roofline::Precision cost_precision = roofline::Precision::dense(dtype_bytes(dtype));
  cost_precision.kv_bytes = dtype_bytes(kv_dtype);
  const int cost_context = a.prompt_tokens + a.tokens / 2;
  std::string modeled_table;
  if (cost_device != nullptr) report["cost_model"] = cli::cost_model_json(*cost_device, cost_precision);
  std::vector<ch06::SweepRow> rows, warn_rows;
  std::vector<ch06::SweepDraft> oracle_drafts;
  std::vector<Model> oracle_models;
  oracle_models.reserve(specs.size());
  for (const ch06::DraftSpec& s : specs) {
    ch06::KernelDraft d = ch06::make_kernel_draft(target, s, in.calibration, dtype, cache_options);
    const ch06::SweepDraft label{d.label, nullptr, double(d.weight_bytes) / target_bytes};
    std::fprintf(stderr, "draft %s (%s)\n", d.label.c_str(), d.weights.c_str());
    auto record = [&](const ch06::SweepRow& r, const char* table) {
      nlohmann::json j = ch06::to_json(r);
      j["table"] = table;
      j["path"] = "kernels";
      j["draft_weights"] = d.weights;
      j["dequantized"] = d.dequantized;
      records.push_back(j);
    };
    const std::size_t first_row = rows.size();
    for (const ch06::SweepCase& c : cases) {
      for (int g : a.gammas) {
        rows.push_back(ch06::measure_sweep_row(target_backend, *d.proposer, label, c, in.prompts, g, a.repeats));
        record(rows.back(), "sweep");
      }
    }
    if (cost_device != nullptr) {
      ch06::add_modeled_rows(std::vector<ch06::SweepRow>(rows.begin() + std::ptrdiff_t(first_row), rows.end()), target.config,
                             s, cost_context, cost_precision, *cost_device, modeled_table, records);
    }
    if (a.warnings) {
      for (const ch06::SweepCase& c : warning_cases) {
        warn_rows.push_back(ch06::measure_sweep_row(target_backend, *d.proposer, label, c, in.prompts,
                                                    warning_gamma, a.repeats));
        record(warn_rows.back(), "warning");
      }
    }
    if (a.oracle && d.model) {
      oracle_models.push_back(d.host_model);
      oracle_drafts.push_back({d.label, &oracle_models.back(), label.bytes_ratio});
    } else if (a.oracle) {
      oracle_drafts.push_back({d.label, nullptr, 0.0});
    }
  }

  const bool sim = std::string(engine::kernel_backend()) == "sim";
  std::printf("\n(times: %s; c = draft seconds per drafted token / plain seconds per token;\n"
              " verify_x = seconds per verify forward / plain seconds per token; predict = the paper's\n"
              " E(a,k) / (k c + 1) with E(a,k) = (1-a^(k+1)) / (1-a), over the rounds the run had (k =\n"
              " drafts a round offered; empty = rounds offering none, pred t/f = the E it predicts per\n"
              " forward); pred_v puts verify_x in place of the 1; c_bytes = draft weight bytes /\n"
              " target's, pred@bytes = the prediction where a step costs its weight bytes)\n",
              sim ? "CPU simulator wall clock: they show trends, not GPU speed" : "wall clock");
  print_rows("speculative decoding through the kernels", rows);
  if (a.warnings) {
    print_rows(("when it does not pay: temperature 2, and 4-token replies (gamma " +
                std::to_string(warning_gamma) + ")").c_str(), warn_rows);
  }
  if (cost_device != nullptr) {
    std::printf("\n== %s, %s, context %d: alpha as measured above, c and verify_x from the model ==\n"
                "%-8s %-24s %5s %6s %9s %9s %8s %10s\n%s"
                "(speedup: %s, as above; predicted = E(a,k) / (k c + verify_x) over the rounds the run "
                "had)\n", cli::modeled_label(*cost_device).c_str(), cost_precision.label().c_str(),
                cost_context, "case", "draft", "gamma", "alpha", "c model", "verify_x", "speedup",
                "predicted", modeled_table.c_str(), sim ? "simulated (CPU time)" : "measured");
  }
  if (a.oracle) {
    const std::vector<ch06::SweepRow> o = ch06::spec_sweep(target, oracle_drafts, in.prompts, cases,
                                                           a.gammas, a.repeats);
    for (const ch06::SweepRow& r : o) {
      nlohmann::json j = ch06::to_json(r);
      j["table"] = "sweep";
      j["path"] = "oracle";
      records.push_back(j);
    }
    print_rows("the same through the CPU oracle (Eigen)", o);
  }
  if (!a.json.empty()) write_json(a.json, report);
  return 0;
}

}  // namespace
}  // namespace nanoserve::ch06

int main(int argc, char** argv) {
  using nanoserve::ch06::Args;
  Args a;
  CLI::App app{"Chapter 6: speculative decoding (see chapters/ch06_speculative_decoding/README.md)"};
  app.add_option("--model,-m", a.model, "target model file or synthetic:<name>")->capture_default_str();
  app.add_option("--drafts", a.drafts,
                 "comma-separated drafts: layers-K, int8-rtn, int4-rtn, int4-gptq, int4-awq, ngram "
                 "(default: all kinds)");
  app.add_option("--gammas", a.gammas, "draft tokens per round to sweep")->delimiter(',')->capture_default_str()
      ->check(CLI::Range(1, 63));
  app.add_option("--tokens,-n", a.tokens, "new tokens per request")->capture_default_str()
      ->check(CLI::Range(1, 1 << 16));
  app.add_option("--prompts", a.prompts, "prompts taken from the text sample")->capture_default_str()
      ->check(CLI::Range(1, 80));
  app.add_option("--prompt-tokens", a.prompt_tokens, "tokens per prompt, BOS included")->capture_default_str()
      ->check(CLI::Range(2, 256));
  app.add_option("--temperature,-t", a.temperature, "temperature of the sampled case")->capture_default_str()
      ->check(nanoserve::cli::number_in(0, 100, /*open_low=*/true));
  app.add_option("--seed,-s", a.seed, "the requests' RNG seed")->capture_default_str()
      ->check(nanoserve::cli::seed_range());
  app.add_option("--repeats", a.repeats, "interleaved plain/speculative passes per row (medians)")
      ->capture_default_str()->check(CLI::Range(1, 100));
  app.add_flag("!--no-warnings", a.warnings, "skip the high-temperature and short-reply rows");
  app.add_flag("--oracle", a.oracle, "also run every row through the CPU oracle");
  app.add_option("--dtype", a.dtype, "storage type of weights and activations, target and drafts (--tour: fp32 unless given)")
      ->capture_default_str()->check(CLI::IsMember({"fp32", "fp16", "bf16"}));
  app.add_option("--kv-dtype", a.kv_dtype, "storage type of the KV caches (default: --dtype)")
      ->check(CLI::IsMember({"fp32", "fp16", "bf16"}));
  nanoserve::cli::add_cost_device_flag(app, a.cost_device);
  app.add_option("--json", a.json, "also write every row as JSON records to this path");
  app.add_flag("--tour", a.tour, "a short run for scripts/tour.sh: three drafts, gamma 1 and 4, 12 tokens");
  return nanoserve::cli::run_program("ch06_speculative_decoding", app, argc, argv, [&] {
    if (a.tour && app.count("--dtype") == 0) a.dtype = "fp32";  // tours: the exact mode
    if (a.tour) {
      if (app.count("--gammas") == 0) a.gammas = {1, 4};
      if (app.count("--tokens") == 0) a.tokens = 12;
      a.prompts = 1;
      a.warnings = false;
    }
    return nanoserve::ch06::run(a);
  });
}
