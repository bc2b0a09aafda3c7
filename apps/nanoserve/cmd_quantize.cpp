// nanoserve quantize: a model's linear layers to INT8/INT4 (RTN, GPTQ or AWQ), saved as an NSQM
// file that `nanoserve generate/eval --model file.nsqm` run (chapter 5).
//
//   nanoserve quantize --model stories260K.bin --method gptq --bits 4 --group 128 --out q.nsqm
//
// GPTQ and AWQ calibrate on documents 80..99 of the TinyStories sample by default — the
// calibration slice; chapter 5 evaluates on documents 0..79, so a method is never scored on the
// text it was fitted to (common/quant/calibration.h).
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "apps/nanoserve/commands.h"
#include "common/cli/cli_checks.h"
#include "common/data_path.h"
#include "common/engine/model/quantized_bundle.h"
#include "common/error.h"
#include "common/eval/documents.h"
#include "common/model_bundle.h"
#include "common/quant/calibration.h"
#include "common/quant/quant_io.h"
#include "common/quant/quantize_model.h"
#include "common/report.h"

namespace nanoserve::cli {

namespace {
struct QuantizeArgs {
  std::string model = default_model_spec();
  std::string tokenizer;
  std::string out;
  std::string method = "rtn";
  int bits = 4;
  int group = 128;
  bool asym = false;
  bool act_order = false;
  double damp = 0.01;
  bool no_clip = false;
  std::string calib_text = "tinystories_valid_sample.txt";
  int calib_first = quant::kCalibrationDocuments.first;
  int calib_count = quant::kCalibrationDocuments.count;
  std::string json;
};

/// Calibration sequences for GPTQ/AWQ: documents [first, first + count) of the text.
std::vector<std::vector<int>> calibration(const QuantizeArgs& a, const Tokenizer& tok) {
  const std::optional<std::string> path = find_data_file(a.calib_text);
  if (!path) {
    throw LoadError(a.calib_text, "path",
                    "calibration text not found (searched as given, $NANOSERVE_DATA, data/models)");
  }
  const std::string text = eval::read_text_file(*path);
  const std::string docs = quant::select_documents(text, {a.calib_first, a.calib_count});
  std::fprintf(stderr, "calibration: documents %d..%d of %s\n", a.calib_first,
               a.calib_first + a.calib_count - 1, path->c_str());
  return quant::calibration_sequences(docs, tok);
}

int run_quantize(const QuantizeArgs& a) {
  // Everything the flags can get wrong is refused before the model is even loaded.
  quant::QuantizeOptions o;
  o.method = quant::parse_quant_method(a.method);
  o.scheme = quant::QuantScheme{a.bits, a.group, !a.asym};
  o.scheme.validate();
  if (a.act_order && o.method != quant::QuantMethod::kGptq) {
    throw InvalidArgument("--act-order is a GPTQ option (the column order GPTQ quantizes in); "
                          "not for --method " + a.method);
  }
  if (!(a.damp > 0 && a.damp < 1)) {
    throw InvalidArgument("--damp " + std::to_string(a.damp) + " must be in (0, 1)");
  }
  o.gptq.act_order = a.act_order;
  o.gptq.damp_percent = a.damp;
  o.awq.clip = !a.no_clip;
  if (engine::is_quantized_model_file(a.model)) {
    throw InvalidArgument(a.model + " is already quantized (NSQM); quantize the fp32 model it came from");
  }
  if (std::filesystem::is_directory(a.out)) throw InvalidArgument("--out " + a.out + " is a directory");

  const ModelBundle b = load_model_bundle(a.model, a.tokenizer);
  std::vector<std::vector<int>> calib;
  if (o.method != quant::QuantMethod::kRtn) calib = calibration(a, *b.tokenizer);
  if (isatty(STDERR_FILENO)) o.progress = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  quant::QuantizeReport report;
  quant::QuantizedModel q = quant::quantize_model(b.model, calib, o, &report);
  q.base.source = a.out;
  quant::save_quantized_model(q, a.out);

  std::int64_t fp32_linears = 0;  // what the same linears take in fp32
  for (quant::LinearId id : quant::kLinearIds) {
    fp32_linears += 4 * std::int64_t(quant::linear_rows(b.model.config, id)) *
                    quant::linear_cols(b.model.config, id) * b.model.config.n_layers;
  }
  const auto file_bytes = static_cast<long long>(std::filesystem::file_size(a.out));
  std::printf("model          %s\nmethod         %s%s\nscheme         %s\n", b.model.source.c_str(),
              a.method.c_str(), a.act_order ? " (act-order)" : "", o.scheme.label().c_str());
  if (!calib.empty()) std::printf("calibration    %zu sequences\n", calib.size());
  std::printf("seconds        %.2f\nlinears        %lld bytes (fp32: %lld, %.2fx smaller)\n",
              report.seconds, static_cast<long long>(q.linear_bytes()),
              static_cast<long long>(fp32_linears), double(fp32_linears) / double(q.linear_bytes()));
  std::printf("wrote          %s (%lld bytes)\n", a.out.c_str(), file_bytes);
  if (!a.json.empty()) {
    nlohmann::json rep = make_report("nanoserve quantize", "host", "CPU (Eigen)");
    rep["records"].push_back({{"model", b.model.source}, {"method", a.method},
                              {"scheme", o.scheme.label()}, {"act_order", a.act_order},
                              {"calibration_sequences", calib.size()}, {"seconds", report.seconds},
                              {"linear_bytes", q.linear_bytes()}, {"fp32_linear_bytes", fp32_linears},
                              {"file", a.out}, {"file_bytes", file_bytes}});
    write_json(a.json, rep);
  }
  return 0;
}
}  // namespace

Action add_quantize(CLI::App& parent) {
  auto args = std::make_shared<QuantizeArgs>();
  CLI::App* c = parent.add_subcommand(
      "quantize", "Quantize a model's linear layers (RTN, GPTQ, AWQ) into an NSQM file");
  c->add_option("--model,-m", args->model, "fp32 model file, directory or synthetic:<name>")
      ->capture_default_str();
  c->add_option("--tokenizer,-z", args->tokenizer, "tokenizer file (default: found from the model)");
  c->add_option("--out,-o", args->out, "the NSQM file to write")->required();
  c->add_option("--method", args->method, "rtn, gptq or awq")->capture_default_str();
  c->add_option("--bits", args->bits, "4 or 8 (checked with the scheme)")->capture_default_str()
      ->check(CLI::Range(1, 8));
  c->add_option("--group", args->group, "columns per scale group; 0 = per channel")->capture_default_str()
      ->check(CLI::Range(0, 1 << 20));
  auto* sym = c->add_flag("--sym", "symmetric: implicit zero point 2^(bits-1) (default)");
  auto* asym = c->add_flag("--asym", args->asym, "asymmetric: a stored zero point per group");
  sym->excludes(asym);
  c->add_flag("--act-order", args->act_order, "GPTQ: quantize columns by decreasing Hessian diagonal");
  c->add_option("--damp", args->damp, "GPTQ: dampening, a fraction of the mean Hessian diagonal")
      ->capture_default_str()->check(number_in(0, 1, /*open_low=*/true));
  c->add_flag("--no-clip", args->no_clip, "AWQ: skip the weight-clipping search");
  c->add_option("--calib-text", args->calib_text, "GPTQ/AWQ calibration documents")->capture_default_str();
  c->add_option("--calib-first", args->calib_first, "first calibration document (the sample's 80..99 "
                "are its calibration slice; 0..79 are chapter 5's evaluation slice)")
      ->capture_default_str()->check(CLI::Range(0, 1 << 20));
  c->add_option("--calib-count", args->calib_count, "number of calibration documents")
      ->capture_default_str()->check(CLI::Range(1, 1 << 20));
  c->add_option("--json", args->json, "also write a summary as JSON to this path");
  return [args] { return run_quantize(*args); };
}

}  // namespace nanoserve::cli
