#include "chapters/ch05_quantization/modeled_decode.h"

#include <cstdio>
#include <string>

#include "common/cli/cost_device.h"
#include "common/engine/model/device_info.h"
#include "common/loaders/synthetic_model.h"

namespace nanoserve::ch05 {

roofline::Precision modeled_precision(const SweepConfig& config) {
  if (config.method == "fp32") return roofline::Precision::dense(4);
  const roofline::Precision fp16 = roofline::Precision::dense(2);
  if (config.method == "fp16") return fp16;
  const quant::QuantScheme& q = config.scheme;
  return roofline::Precision::weight_only(q.bits, q.group_size, !q.symmetric, fp16);
}

void print_modeled_decode(const ModelData& data, const std::vector<SweepRow>& rows,
                          const roofline::Device& device, nlohmann::json& records) {
  const ModelConfig& c = data.bundle.model.config;
  const ModelConfig big = synthetic_config("llama2-7b");
  constexpr int kBigContext = 512;  // a short chat turn: weights dominate, KV does not
  const auto step_s = [&](const ModelConfig& m, int context, const roofline::Precision& p) {
    return roofline::pass_cost(m, roofline::PassShape::decode(1, context), p, device).time_s();
  };
  const int context = static_cast<int>(data.prompt.size());
  const roofline::Precision fp16 = roofline::Precision::dense(2);
  const double fp16_small = step_s(c, context, fp16), fp16_big = step_s(big, kBigContext, fp16);
  const bool sim = std::string(engine::kernel_backend()) == "sim";
  std::printf("\n== decode speed, %s (batch 1; %s at context %d, llama2-7b at %d) vs %s ==\n",
              cli::modeled_label(device).c_str(), data.name.c_str(), context, kBigContext,
              sim ? "simulated (CPU time)" : "measured");
  std::printf("  %-24s %-22s %10s %9s %8s | %10s %9s %8s | %12s\n", "method / format", "modeled as",
              "step us", "tok/s", "vs fp16", "7b step ms", "7b tok/s", "vs fp16",
              sim ? "sim tok/s" : "meas. tok/s");
  for (const SweepRow& r : rows) {
    const roofline::Precision p = modeled_precision(r.config);
    const double small = step_s(c, context, p), large = step_s(big, kBigContext, p);
    const bool dense = r.config.method == "fp32" || r.config.method == "fp16";
    const std::string label = dense ? r.config.method : r.config.method + " " + r.config.format();
    std::printf("  %-24s %-22s %10.2f %9.0f %7.2fx | %10.3f %9.1f %7.2fx | %12.1f\n", label.c_str(),
                p.label().c_str(), 1e6 * small, 1 / small, fp16_small / small, 1e3 * large,
                1 / large, fp16_big / large, r.decode.tokens_per_second());
    records.push_back({{"table", "modeled_decode"}, {"model", data.name}, {"method", r.config.method},
                       {"format", r.config.format()}, {"modeled_as", p.label()},
                       {"device", device.key}, {"step_modeled_s", small},
                       {"speedup_vs_fp16_modeled", fp16_small / small},
                       {"llama2_7b_step_modeled_s", large},
                       {"llama2_7b_speedup_vs_fp16_modeled", fp16_big / large},
                       {"measured_tokens_per_s", r.decode.tokens_per_second()}});
  }
  std::printf("  (eager launches, %.0f us each, are the same at every format: they bound a tiny "
              "model's step, and cut INT4's gain at 7B)\n", 1e6 * roofline::kKernelLaunchSeconds);
}

}  // namespace nanoserve::ch05
