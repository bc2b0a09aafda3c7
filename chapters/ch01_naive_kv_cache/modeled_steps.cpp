#include "chapters/ch01_naive_kv_cache/modeled_steps.h"

#include <cstdio>

#include "common/cli/cost_device.h"
#include "common/engine/model/device_info.h"
#include "common/roofline/pass_cost.h"

namespace nanoserve::ch01 {

void print_modeled_steps(const ModelConfig& c, int dtype_bytes, const std::vector<ModeSteps>& modes,
                         const roofline::Device& device, nlohmann::json& records) {
  const roofline::Precision p = roofline::Precision::dense(dtype_bytes);
  const bool sim = std::string(engine::kernel_backend()) == "sim";
  std::printf("\n== %s, %s: the same passes ==\n", cli::modeled_label(device).c_str(), p.label().c_str());
  std::printf("  %-11s %14s %16s %14s %16s\n", "mode", "prefill ms", "decode ms", "prefill ms",
              "decode ms");
  std::printf("  %-11s %31s %31s\n", "", "modeled", sim ? "simulated (CPU time)" : "measured");
  roofline::PassCost last;
  for (const ModeSteps& m : modes) {
    const std::vector<StepRecord>& steps = *m.second;
    if (steps.empty()) continue;
    double modeled_prefill = 0, modeled_decode = 0, measured_decode = 0;
    for (std::size_t i = 0; i < steps.size(); ++i) {
      const StepRecord& s = steps[i];
      // A call computed `rows` rows ending at `position`: the prompt, the whole prefix again
      // (no-cache) or one row over the cache (naive-cache).
      const int rows = static_cast<int>(s.rows);
      roofline::PassShape shape{{{s.position - rows + 1, rows, true}}};
      const roofline::PassCost cost = roofline::pass_cost(c, shape, p, device);
      (i == 0 ? modeled_prefill : modeled_decode) += cost.time_s();
      if (i > 0) measured_decode += s.ms;
      records.push_back({{"table", "modeled_latency"}, {"mode", m.first}, {"step", s.step},
                         {"position", s.position}, {"rows", s.rows}, {"device", device.key},
                         {"modeled_ms", 1e3 * cost.time_s()}, {"ms", s.ms}});
      last = cost;
    }
    std::printf("  %-11s %14.3f %16.3f %14.2f %16.1f\n", m.first.c_str(), 1e3 * modeled_prefill,
                1e3 * modeled_decode, steps.front().ms, measured_decode);
  }
  if (last.device != nullptr) {
    std::printf("  the last pass, kernel by kernel (modeled):\n%s",
                roofline::format_breakdown(last).c_str());
  }
}

}  // namespace nanoserve::ch01
