// nanoserve quantize: a model's linear layers to INT8/INT4 (RTN, GPTQ or AWQ), saved as an NSQM
// file that `nanoserve generate/eval --model file.nsqm` run (chapter 5), or — with an --out that
// ends in .gguf — as a GGUF file llama.cpp runs (common/quant/quant_gguf.h): int4/int8 with
// groups of 32, symmetric, ARE ggml's Q4_0/Q8_0 and are written code for code; --gguf-type q4_k
// runs ggml's own Q4_K quantizer instead.
//
//   nanoserve quantize --model stories260K.bin --method gptq --bits 4 --group 128 --out q.nsqm
//   nanoserve quantize --model tinystories-656k --method gptq --out q4_0.gguf
//   nanoserve quantize --model M --gguf-type q4_k --out q4_k.gguf
//
// GPTQ and AWQ calibrate on documents 80..99 of the TinyStories sample by default — the
// calibration slice; chapter 5 evaluates on documents 0..79, so a method is never scored on the
// text it was fitted to (common/quant/calibration.h).
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "apps/nanoserve/commands.h"
#include "common/cli/cli_checks.h"
#include "common/data_path.h"
#include "common/engine/model/quantized_bundle.h"
#include "common/error.h"
#include "common/eval/documents.h"
#include "common/io/output_file.h"
#include "common/loaders/gguf_export.h"
#include "common/model_bundle.h"
#include "common/quant/calibration.h"
#include "common/quant/quant_gguf.h"
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
  std::string gguf_type;  ///< "" = from --bits, when --out ends in .gguf
  bool bits_given = false, group_given = false, sym_given = false;
};

bool is_gguf_path(const std::string& path) {
  return path.size() > 5 && path.compare(path.size() - 5, 5, ".gguf") == 0;
}

/// For a .gguf --out: the GGUF type, with `o.scheme` set to the grid it stores ("" for NSQM).
/// Refuses what GGUF cannot hold before anything is loaded.
std::string gguf_plan(const QuantizeArgs& a, quant::QuantizeOptions& o) {
  if (!is_gguf_path(a.out)) {
    if (!a.gguf_type.empty()) {
      throw InvalidArgument("--gguf-type " + a.gguf_type + " needs an --out that ends in .gguf");
    }
    return "";
  }
  const std::string type = !a.gguf_type.empty() ? a.gguf_type : a.bits == 8 ? "q8_0" : "q4_0";
  if (type == "q4_k") {
    if (o.method != quant::QuantMethod::kRtn) {
      throw InvalidArgument("--gguf-type q4_k runs ggml's own Q4_K quantizer (round to nearest "
                            "with a fitted scale and min), not --method " + a.method +
                            "; for GPTQ/AWQ codes in GGUF use --gguf-type q4_0 (int4, group 32)");
    }
    if (a.group_given || a.asym || a.sym_given || (a.bits_given && a.bits != 4)) {
      throw InvalidArgument("--gguf-type q4_k has its own grid (4 bits, 6-bit scale and min per "
                            "32 columns, 256-column super-blocks): drop --bits/--group/--sym/--asym");
    }
    return type;
  }
  if (type != "q4_0" && type != "q8_0") {
    throw InvalidArgument("--gguf-type '" + type + "' is not one of q4_0, q8_0, q4_k");
  }
  const int bits = type == "q4_0" ? 4 : 8;
  if (a.bits_given && a.bits != bits) {
    throw InvalidArgument("--gguf-type " + type + " stores " + std::to_string(bits) +
                          "-bit codes, not --bits " + std::to_string(a.bits));
  }
  o.scheme.bits = bits;
  if (!a.group_given) o.scheme.group_size = 32;  // ggml's block width
  quant::lossless_gguf_type(o.scheme);           // group 32, symmetric, or a clear error
  if (a.act_order) {
    throw InvalidArgument("--act-order scatters a group's columns over the row; GGUF blocks are "
                          "32 consecutive columns: drop --act-order for a .gguf --out");
  }
  return type;
}

/// Bytes of the linears stored as Q4_K: 144 per 256 weights.
int64_t q4_k_linear_bytes(const ModelConfig& c) {
  int64_t n = 0;
  for (quant::LinearId id : quant::kLinearIds) {
    n += int64_t(quant::linear_rows(c, id)) * quant::linear_cols(c, id) * c.n_layers;
  }
  return n / 256 * 144;
}

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
  const std::string gguf_type = gguf_plan(a, o);

  const ModelBundle b = load_model_bundle(a.model, a.tokenizer);
  std::optional<GgufVocabulary> vocab;  // before quantizing: a tokenizer GGUF cannot say fails fast
  if (!gguf_type.empty()) {
    vocab = gguf_vocabulary_of(*b.tokenizer, b.model.config.vocab_size, b.chat_template, a.model);
    quant::check_gguf_linear_shapes(b.model.config, parse_gguf_dtype(gguf_type));
  }
  std::vector<std::vector<int>> calib;
  quant::QuantizeReport report;
  quant::QuantizedModel q;
  int64_t linear_bytes = 0;
  std::string scheme_label;
  if (gguf_type == "q4_k") {
    const std::vector<uint8_t> bytes = quant::export_q4_k_gguf(b.model, *vocab);
    write_output_file(a.out, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
    linear_bytes = q4_k_linear_bytes(b.model.config);
    scheme_label = "q4_k (ggml Q4_K, 4.5 bits per weight)";
  } else {
    if (o.method != quant::QuantMethod::kRtn) calib = calibration(a, *b.tokenizer);
    if (isatty(STDERR_FILENO)) o.progress = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
    q = quant::quantize_model(b.model, calib, o, &report);
    q.base.source = a.out;
    if (gguf_type.empty()) {
      quant::save_quantized_model(q, a.out);
    } else {
      const std::vector<uint8_t> bytes = quant::export_quantized_gguf(q, *vocab);
      write_output_file(a.out, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
    }
    linear_bytes = q.linear_bytes();
    scheme_label = o.scheme.label() + (gguf_type.empty() ? "" : " (GGUF " + gguf_type + ", lossless)");
  }

  std::int64_t fp32_linears = 0;  // what the same linears take in fp32
  for (quant::LinearId id : quant::kLinearIds) {
    fp32_linears += 4 * std::int64_t(quant::linear_rows(b.model.config, id)) *
                    quant::linear_cols(b.model.config, id) * b.model.config.n_layers;
  }
  const auto file_bytes = static_cast<long long>(std::filesystem::file_size(a.out));
  std::printf("model          %s\nmethod         %s%s\nscheme         %s\n", b.model.source.c_str(),
              a.method.c_str(), a.act_order ? " (act-order)" : "", scheme_label.c_str());
  if (!calib.empty()) std::printf("calibration    %zu sequences\n", calib.size());
  std::printf("seconds        %.2f\nlinears        %lld bytes (fp32: %lld, %.2fx smaller)\n",
              report.seconds, static_cast<long long>(linear_bytes),
              static_cast<long long>(fp32_linears), double(fp32_linears) / double(linear_bytes));
  std::printf("wrote          %s (%lld bytes)\n", a.out.c_str(), file_bytes);
  if (!a.json.empty()) {
    nlohmann::json rep = make_report("nanoserve quantize", "host", "CPU (Eigen)");
    rep["records"].push_back({{"model", b.model.source}, {"method", a.method},
                              {"scheme", scheme_label}, {"act_order", a.act_order},
                              {"format", gguf_type.empty() ? "nsqm" : "gguf"},
                              {"gguf_type", gguf_type},
                              {"calibration_sequences", calib.size()}, {"seconds", report.seconds},
                              {"linear_bytes", linear_bytes}, {"fp32_linear_bytes", fp32_linears},
                              {"file", a.out}, {"file_bytes", file_bytes}});
    write_json(a.json, rep);
  }
  return 0;
}
}  // namespace

Action add_quantize(CLI::App& parent) {
  auto args = std::make_shared<QuantizeArgs>();
  CLI::App* c = parent.add_subcommand(
      "quantize", "Quantize a model's linear layers (RTN, GPTQ, AWQ) into an NSQM or GGUF file");
  c->add_option("--model,-m", args->model, "fp32 model file, directory or synthetic:<name>")
      ->capture_default_str();
  c->add_option("--tokenizer,-z", args->tokenizer, "tokenizer file (default: found from the model)");
  c->add_option("--out,-o", args->out,
                "the file to write: NSQM, or GGUF for llama.cpp when it ends in .gguf "
                "(int4/int8 with --group 32, symmetric, no act-order: written losslessly as "
                "Q4_0/Q8_0)")->required();
  c->add_option("--gguf-type", args->gguf_type,
                "GGUF block type of the linears (.gguf --out only): q4_0 (int4 codes, group 32; "
                "lossless), q8_0 (int8 codes, group 32; lossless), q4_k (ggml's Q4_K quantizer, "
                "--method rtn, rows of whole 256 columns); default from --bits");
  c->add_option("--method", args->method, "rtn, gptq or awq")->capture_default_str();
  c->add_option("--bits", args->bits, "4 or 8 (checked with the scheme)")->capture_default_str()
      ->check(CLI::Range(1, 8));
  c->add_option("--group", args->group, "columns per scale group; 0 = per channel (a .gguf --out: 32)")
      ->capture_default_str()->check(CLI::Range(0, 1 << 20));
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
  return [args, c] {
    args->bits_given = c->count("--bits") > 0;
    args->group_given = c->count("--group") > 0;
    args->sym_given = c->count("--sym") > 0;
    return run_quantize(*args);
  };
}

}  // namespace nanoserve::cli
