#include "chapters/ch02_paged_kv_cache/modeled_multiturn.h"

#include <cstdio>
#include <string>

#include "common/cli/cost_device.h"
#include "common/engine/model/device_info.h"
#include "common/roofline/pass_cost.h"

namespace nanoserve::ch02 {

double modeled_multiturn_seconds(const ModelConfig& c, int dtype_bytes, const MultiturnRun& run,
                                 const roofline::Device& device) {
  const roofline::Precision p = roofline::Precision::dense(dtype_bytes);
  double total = 0;
  for (const TurnRecord& t : run.turns) {
    // The prompt's uncached rows in one pass (at least the last one: its logits give the
    // first reply token), then one pass per further reply token.
    const int computed = t.computed_tokens > 0 ? t.computed_tokens : 1;
    const roofline::PassShape prefill{{{t.prompt_tokens - computed, computed, true}}};
    total += roofline::pass_cost(c, prefill, p, device).time_s();
    for (std::size_t i = 1; i < t.reply.size(); ++i) {
      const int context = t.prompt_tokens + static_cast<int>(i) - 1;
      total += roofline::pass_cost(c, roofline::PassShape::decode(1, context), p, device).time_s();
    }
  }
  return total;
}

void print_modeled_multiturn(const ModelConfig& c, int dtype_bytes, const MultiturnRun& off,
                             const MultiturnRun& on, const roofline::Device& device,
                             nlohmann::json& records) {
  const double m_off = modeled_multiturn_seconds(c, dtype_bytes, off, device);
  const double m_on = modeled_multiturn_seconds(c, dtype_bytes, on, device);
  const bool sim = std::string(engine::kernel_backend()) == "sim";
  std::printf("  %s, %s: prefix caching off %.3f ms, on %.3f ms (%.2fx); %s: off %.3f s, on %.3f s\n",
              cli::modeled_label(device).c_str(), dtype_bytes == 4 ? "fp32" : "fp16",
              1e3 * m_off, 1e3 * m_on, m_on > 0 ? m_off / m_on : 0.0,
              sim ? "simulated (CPU time)" : "measured (CPU s)", off.cpu_seconds, on.cpu_seconds);
  records.push_back({{"table", "modeled_multiturn"}, {"device", device.key},
                     {"modeled_off_s", m_off}, {"modeled_on_s", m_on},
                     {"cpu_seconds_off", off.cpu_seconds}, {"cpu_seconds_on", on.cpu_seconds}});
}

}  // namespace nanoserve::ch02
