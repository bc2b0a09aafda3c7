// Chapter 5: weight quantization — RTN, GPTQ, AWQ, and the INT8/INT4 kernels.
//
//   ch05_quantization                                   # both real models, the full table
//   ch05_quantization --model stories260K.bin --formats int4-g128,int8-ch --check
//   ch05_quantization memory                            # 7B/13B/70B weight bytes (computed)
//
// For each model: quantizes its linear layers with every method × format asked for, then
// measures perplexity and bits-per-byte on the evaluation slice of the TinyStories sample
// (documents 0..79; GPTQ and AWQ calibrate on documents 80..99), the mean next-token KL
// divergence against fp32, the weight bytes, and greedy decode speed through the kernels (the
// quantized GEMV) — on the CPU simulator here, so those timings are labelled as such. README.md
// is the tutorial that walks through this file.
#include <CLI/CLI.hpp>
#include <unistd.h>

#include <cstdio>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "chapters/ch05_quantization/modeled_decode.h"
#include "chapters/ch05_quantization/sweep.h"
#include "chapters/ch05_quantization/tables.h"
#include "common/cli/cli_checks.h"
#include "common/cli/cost_device.h"
#include "common/cli/program.h"
#include "common/data_path.h"
#include "common/engine/model/device_info.h"
#include "common/error.h"
#include "common/report.h"

namespace nanoserve::ch05 {
namespace {

struct Args {
  std::vector<std::string> models;
  std::string methods = "rtn,gptq,awq";
  std::string formats = "int4-ch,int4-g128,int4-g128-asym,int4-g64,int4-g32,int8-ch";
  bool act_order = false;
  DataOptions data;
  bool tour = false;
  std::string dtype = engine::default_dtype();  // quantized rows' activations: bf16 on a GPU build
  std::string kv_dtype;                         // empty: --dtype
  std::string cost_device;  // --cost-device: modeled decode speed per format on that GPU
  std::string json;
};

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

/// "int4-g128", "int8-ch", "int4-g32-asym" → a scheme (symmetric unless "-asym").
quant::QuantScheme parse_format(const std::string& f) {
  static const std::regex kFormat(R"(int([0-9]{1,2})-(?:g([0-9]{1,6})|(ch))(-sym|-asym)?)");
  std::smatch m;
  if (!std::regex_match(f, m, kFormat)) {
    throw InvalidArgument("--formats: '" + f + "' is not int<bits>-g<group> or int<bits>-ch, "
                          "optionally ending in -sym or -asym (e.g. int4-g128, int8-ch-asym)");
  }
  quant::QuantScheme s;
  s.bits = std::stoi(m[1].str());
  s.group_size = m[3].matched ? 0 : std::stoi(m[2].str());
  s.symmetric = m[4].str() != "-asym";
  if (!m[3].matched && s.group_size == 0) {
    throw InvalidArgument("--formats: '" + f + "': a group needs >= 1 column (one group per row: -ch)");
  }
  s.validate();
  return s;
}

/// Every configuration of a model's table: the dense baselines, then method × format.
std::vector<SweepConfig> configs(const Args& a) {
  std::vector<SweepConfig> out = {{"fp32", {}, false}, {"fp16", {}, false}};
  const std::vector<std::string> methods = split(a.methods);
  for (const std::string& m : methods) (void)quant::parse_quant_method(m);  // refuse typos early
  for (const std::string& f : split(a.formats)) {
    const quant::QuantScheme s = parse_format(f);
    for (const std::string& m : methods) {
      out.push_back({m, s, false});
      if (m == "gptq" && a.act_order) out.push_back({m, s, true});
    }
  }
  return out;
}

std::vector<std::string> default_models() {
  std::vector<std::string> found;
  for (const char* m : {"stories260K.bin", "tinystories-656k"}) {
    if (find_data_file(m)) found.push_back(m);
  }
  if (found.empty()) found.push_back("synthetic:tiny");
  return found;
}

int run(Args& a) {
  const std::vector<SweepConfig> table = configs(a);  // flags first: fail before loading
  const std::string device = engine::device_name();  // first: a missing GPU is one clear error
  const roofline::Device* cost_device = cli::cost_device(a.cost_device);
  a.data.dtype = parse_dtype(a.dtype);
  a.data.kv_dtype = a.kv_dtype.empty() ? a.data.dtype : parse_dtype(a.kv_dtype);
  if (a.models.empty()) a.models = default_models();
  std::printf("ch05_quantization: weight-only INT8/INT4 quantization — RTN, GPTQ, AWQ\n");
  std::printf("  device  %s [%s backend]\n", device.c_str(), engine::kernel_backend());
  std::printf("  linears quantized (wq wk wv wo w1 w2 w3); embedding, classifier and norms stay fp32\n");
  if (a.data.dtype != DType::kF32 || a.data.kv_dtype != DType::kF32) {
    std::printf("  kernels of the quantized rows: %s activations, embedding, norms and classifier "
                "(true W8A16/W4A16), %s KV cache\n",
                dtype_name(a.data.dtype), dtype_name(a.data.kv_dtype));
  }
  nlohmann::json report = make_report("ch05_quantization", engine::kernel_backend(), device);
  report["step_clock"] = probe_clock_name();
  nlohmann::json& records = report["records"];
  if (cost_device != nullptr) {
    report["cost_model"] = cli::cost_model_json(*cost_device, roofline::Precision::dense(2));
  }
  bool ok = true;
  for (const std::string& spec : a.models) {
    const ModelData data = load_model_data(spec, a.data);
    const ModelConfig& c = data.bundle.model.config;
    std::printf("\n%s: dim %d, hidden %d, %d layers, %d heads / %d KV heads%s\n", data.name.c_str(),
                c.dim, c.hidden_dim, c.n_layers, c.n_heads, c.n_kv_heads,
                data.bundle.format == ModelFormat::kSynthetic ? " (synthetic: random weights, meaningless text)" : "");
    std::vector<SweepRow> rows;
    for (const SweepConfig& config : table) {
      if (isatty(STDERR_FILENO)) {  // progress: a row takes seconds (GPTQ, AWQ, 80 documents)
        std::fprintf(stderr, "  %s: %s %s ...\n", data.name.c_str(), config.method.c_str(),
                     config.format().c_str());
      }
      rows.push_back(measure(data, config, a.data));
      ok = ok && rows.back().decode.check_ok;
    }
    print_results(data, rows, a.data, records);
    if (cost_device != nullptr) print_modeled_decode(data, rows, *cost_device, records);
    print_outliers(data, records);
    print_awq_choices(data, rows, records);
  }
  print_memory(records);
  if (a.data.check) {
    std::printf("\ncheck: every decode step through the kernels vs the CPU oracle on the same "
                "(dequantized) weights: %s\n", ok ? "OK" : "FAILED");
  }
  if (!a.json.empty()) write_json(a.json, report);
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace nanoserve::ch05

int main(int argc, char** argv) {
  using nanoserve::ch05::Args;
  Args a;
  CLI::App app{"Chapter 5: weight quantization, RTN / GPTQ / AWQ (see chapters/ch05_quantization/README.md)"};
  app.add_option("--model,-m", a.models, "model(s) to quantize; default: stories260K.bin and "
                 "tinystories-656k when found, else synthetic:tiny");
  app.add_option("--methods", a.methods, "comma-separated: rtn, gptq, awq")->capture_default_str();
  app.add_option("--formats", a.formats, "comma-separated int<bits>-g<group> / int<bits>-ch "
                 "[-sym|-asym]")->capture_default_str();
  app.add_flag("--act-order", a.act_order, "also GPTQ with act-order for every format");
  app.add_option("--eval-docs", a.data.eval_docs, "perplexity on documents 0..N-1 (the evaluation slice is 0..79)")
      ->capture_default_str()->check(CLI::Range(1, 80));
  app.add_option("--kl-docs", a.data.kl_docs, "KL divergence on documents 0..N-1")
      ->capture_default_str()->check(CLI::Range(1, 80));
  app.add_option("--calib-docs", a.data.calib_docs, "GPTQ/AWQ calibrate on documents 80..80+N-1")
      ->capture_default_str()->check(CLI::Range(1, 20));
  app.add_option("--decode-steps", a.data.decode_steps, "greedy tokens timed through the kernels")
      ->capture_default_str()->check(CLI::Range(1, 256));
  app.add_option("--seed,-s", a.data.seed, "seed of the random token sequences used when the text "
                 "sample is absent")->capture_default_str()->check(nanoserve::cli::seed_range());
  app.add_flag("--check", a.data.check, "run the CPU oracle alongside every decode step and compare logits");
  app.add_option("--dtype", a.dtype, "the quantized rows' activations and non-quantized weights on the "
                 "device (--tour: fp32 unless given)")
      ->capture_default_str()->check(CLI::IsMember({"fp32", "fp16", "bf16"}));
  app.add_option("--kv-dtype", a.kv_dtype, "the quantized rows' KV cache (default: --dtype)")
      ->check(CLI::IsMember({"fp32", "fp16", "bf16"}));
  nanoserve::cli::add_cost_device_flag(app, a.cost_device);
  app.add_option("--json", a.json, "also write every table as JSON records to this path");
  app.add_flag("--tour", a.tour, "a short run for scripts/tour.sh: one model, INT4 g128 and INT8, "
               "fewer documents, --check");
  CLI::App* memory = app.add_subcommand("memory", "weight bytes of Llama-2 7B/13B/70B at each format (computed)");
  memory->add_option("--json", a.json, "also write the table as JSON to this path");
  return nanoserve::cli::run_program("ch05_quantization", app, argc, argv, [&] {
    if (memory->parsed()) {
      nlohmann::json report = nanoserve::make_report("ch05_quantization memory", "host", "host arithmetic");
      nanoserve::ch05::print_memory(report["records"]);
      if (!a.json.empty()) nanoserve::write_json(a.json, report);
      return 0;
    }
    if (a.tour && app.count("--dtype") == 0) a.dtype = "fp32";  // tours: the exact mode
    if (a.tour) {
      if (a.models.empty()) a.models = {nanoserve::default_model_spec()};
      if (app.count("--formats") == 0) a.formats = "int4-g128,int8-ch";
      if (app.count("--eval-docs") == 0) a.data.eval_docs = 20;
      if (app.count("--kl-docs") == 0) a.data.kl_docs = 4;
      if (app.count("--calib-docs") == 0) a.data.calib_docs = 10;
      if (app.count("--decode-steps") == 0) a.data.decode_steps = 8;
      a.data.check = true;
    }
    return nanoserve::ch05::run(a);
  });
}
