#include "chapters/ch05_quantization/tables.h"

#include <cmath>
#include <cstdio>

#include "chapters/ch05_quantization/quantized_memory.h"
#include "common/loaders/synthetic_model.h"
#include "common/oracle/forward.h"
#include "common/quant/quant_metrics.h"

namespace nanoserve::ch05 {

namespace {
/// "4.2480" or "n/a" (no text sample).
std::string number(double v, const char* fmt) {
  if (std::isnan(v)) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}
/// JSON null for NaN (no perplexity without the text sample).
nlohmann::json json_number(double v) { return std::isnan(v) ? nlohmann::json() : nlohmann::json(v); }
}  // namespace

void print_results(const ModelData& data, const std::vector<SweepRow>& rows, const DataOptions& o,
                   nlohmann::json& records) {
  const SweepRow& fp32 = rows.front();
  std::printf("\n== %s: quality, size and decode speed ==\n", data.name.c_str());
  std::printf("  calibration  %s\n  evaluation   %s\n", data.calibration_note.c_str(),
              data.eval_note.c_str());
  std::printf("  decode       %d greedy tokens through the kernels, %s per token "
              "(CPU-simulator timings: not GPU speed)\n", o.decode_steps, probe_clock_name());
  std::printf("  quant s      %s of the quantization on the host (Eigen)\n", probe_clock_name());
  std::printf("  %-6s %-18s %6s %10s %10s %8s %7s %7s %9s %7s %8s", "method", "format", "bits/w",
              "linears", "total", "ppl", "Δppl", "bpb", "KL nats", "quant s", "tok/s");
  if (o.check) std::printf(" %11s", "max|dlogit|");
  std::printf("\n");
  for (const SweepRow& r : rows) {
    const double delta = 100.0 * (r.perplexity / fp32.perplexity - 1.0);
    std::printf("  %-6s %-18s %6.2f %10s %10s %8s %7s %7s %9s %7.2f %8.1f", r.config.method.c_str(),
                r.config.format().c_str(), r.bits_per_weight, format_bytes(double(r.linear_bytes)).c_str(),
                format_bytes(double(r.weight_bytes)).c_str(), number(r.perplexity, "%.4f").c_str(),
                &r == &fp32 ? "" : number(delta, "%+.2f%%").c_str(), number(r.bits_per_byte, "%.4f").c_str(),
                number(r.kl, "%.2e").c_str(), r.quantize_seconds, r.decode.tokens_per_second());
    if (o.check) std::printf(" %11.2e%s", r.decode.max_abs_diff, r.decode.check_ok ? "" : " FAILED");
    std::printf("\n");
    const bool dense = r.config.method == "fp32" || r.config.method == "fp16";
    records.push_back({{"table", "results"}, {"model", data.name}, {"method", r.config.method},
                       {"format", r.config.format()},
                       {"bits", dense ? (r.config.method == "fp32" ? 32 : 16) : r.config.scheme.bits},
                       {"group_size", dense ? nlohmann::json() : nlohmann::json(r.config.scheme.group_size)},
                       {"symmetric", dense ? nlohmann::json() : nlohmann::json(r.config.scheme.symmetric)},
                       {"act_order", r.config.act_order},
                       {"bits_per_weight", r.bits_per_weight}, {"linear_bytes", r.linear_bytes},
                       {"weight_bytes", r.weight_bytes}, {"perplexity", json_number(r.perplexity)},
                       {"bits_per_byte", json_number(r.bits_per_byte)}, {"kl", r.kl},
                       {"quantize_seconds", r.quantize_seconds},
                       {"decode_tokens_per_s", r.decode.tokens_per_second()},
                       {"prefill_ms", r.decode.prefill_ms}, {"decode_steps", r.decode.decode_steps},
                       {"checked", r.decode.checked}, {"max_abs_logit_diff", r.decode.max_abs_diff},
                       {"check_ok", r.decode.check_ok}, {"calibration", data.calibration_note},
                       {"evaluation", data.eval_note}, {"tokens", r.decode.tokens}});
  }
}

void print_outliers(const ModelData& data, nlohmann::json& records) {
  const Model& m = data.bundle.model;
  const std::vector<quant::BlockStats> stats =
      quant::collect_block_stats(m, data.calibration, 0, m.config.n_layers - 1);
  std::printf("\n== %s: activation outliers on the calibration inputs ==\n", data.name.c_str());
  std::printf("  per input channel c: mean|x_c| over tokens; spread = max_c / mean_c of it (AWQ's\n"
              "  saliency), peak = max_c max|x_c| / mean_c mean|x_c| (single-token outliers)\n");
  std::printf("  %5s | %-17s | %-17s | %-17s | %-17s\n", "block", "wq/wk/wv input", "wo input",
              "w1/w3 input", "w2 input");
  std::printf("  %5s |", "");
  for (int i = 0; i < 4; ++i) std::printf(" %7s %8s |", "spread", "peak");
  std::printf("\n");
  const std::vector<quant::ActivationOutliers> out = quant::activation_outliers(stats);
  for (int l = 0; l < m.config.n_layers; ++l) {
    std::printf("  %5d |", l);
    for (const quant::ActivationOutliers& a : out) {
      if (a.layer != l) continue;
      std::printf(" %7.2f %8.2f |", a.mean_ratio, a.peak_ratio);
      records.push_back({{"table", "outliers"}, {"model", data.name}, {"layer", a.layer},
                         {"input", oracle::to_string(a.input)}, {"mean_ratio", a.mean_ratio},
                         {"peak_ratio", a.peak_ratio}});
    }
    std::printf("\n");
  }
}

void print_awq_choices(const ModelData& data, const std::vector<SweepRow>& rows, nlohmann::json& records) {
  bool header = false;
  for (const SweepRow& r : rows) {
    if (r.awq.empty()) continue;
    if (!header) {
      std::printf("\n== %s: AWQ's search (α per block; s = mean|x|^α; 0 = plain RTN) ==\n",
                  data.name.c_str());
      std::printf("  %-18s %5s %6s %6s %6s %6s %8s\n", "format", "block", "qkv", "wo", "w1/w3",
                  "w2", "clipped");
      header = true;
    }
    for (std::size_t l = 0; l < r.awq.size(); ++l) {
      const quant::AwqLayerReport& a = r.awq[l];
      const std::string wo = a.alpha_wo < 0 ? "GQA" : number(a.alpha_wo, "%.2f");
      std::printf("  %-18s %5zu %6.2f %6s %6.2f %6.2f %8d\n", r.config.format().c_str(), l,
                  a.alpha_qkv, wo.c_str(), a.alpha_w13, a.alpha_w2, a.clipped_groups);
      records.push_back({{"table", "awq"}, {"model", data.name}, {"format", r.config.format()},
                         {"layer", l}, {"alpha_qkv", a.alpha_qkv}, {"alpha_wo", a.alpha_wo},
                         {"alpha_w13", a.alpha_w13}, {"alpha_w2", a.alpha_w2},
                         {"clipped_groups", a.clipped_groups}});
    }
  }
}

void print_memory(nlohmann::json& records) {
  struct Format {
    const char* name;
    quant::QuantScheme scheme;
    bool dense;
  };
  const Format formats[] = {{"fp16", {}, true},
                            {"int8-ch-sym", {8, 0, true}, false},
                            {"int8-g128-sym", {8, 128, true}, false},
                            {"int4-g128-sym", {4, 128, true}, false},
                            {"int4-g128-asym", {4, 128, false}, false},
                            {"int4-g64-sym", {4, 64, true}, false},
                            {"int4-g32-sym", {4, 32, true}, false}};
  std::printf("\n== weight memory of Llama-2 shapes (COMPUTED from the shapes, not measured; "
              "embedding, classifier and norms in fp16) ==\n");
  std::printf("  %-11s %-15s %7s %11s %11s %9s\n", "model", "format", "bits/w", "linears", "total",
              "vs fp16");
  for (const char* name : {"llama2-7b", "llama2-13b", "llama2-70b"}) {
    const ModelConfig c = synthetic_config(name);
    const double fp16_total = double(ch05::dense_weight_bytes(c, 2).total());
    for (const Format& f : formats) {
      const ch05::WeightBytes w =
          f.dense ? ch05::dense_weight_bytes(c, 2) : ch05::quantized_weight_bytes(c, f.scheme, 2);
      std::printf("  %-11s %-15s %7.3f %11s %11s %8.2fx\n", name, f.name, w.bits_per_linear_weight(),
                  format_bytes(double(w.linears)).c_str(), format_bytes(double(w.total())).c_str(),
                  fp16_total / double(w.total()));
      records.push_back({{"table", "memory"}, {"model", name}, {"format", f.name},
                         {"bits_per_weight", w.bits_per_linear_weight()}, {"linear_bytes", w.linears},
                         {"total_bytes", w.total()}, {"computed", true}});
    }
  }
}

}  // namespace nanoserve::ch05
