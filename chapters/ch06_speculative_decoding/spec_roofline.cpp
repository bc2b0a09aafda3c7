#include "chapters/ch06_speculative_decoding/spec_roofline.h"

#include <cstdio>

#include "common/speculative/spec_decoder.h"

namespace nanoserve::ch06 {

ModeledCosts modeled_costs(const ModelConfig& target, const DraftSpec& spec, int gamma, int context,
                           const roofline::Precision& precision, const roofline::Device& device) {
  const roofline::PassShape step = roofline::PassShape::decode(1, context);
  ModeledCosts m;
  m.target_step_s = roofline::pass_cost(target, step, precision, device).time_s();
  roofline::PassShape verify;
  verify.chunks = {{context, gamma + 1, true}};  // γ drafts and the token before them
  m.verify = roofline::pass_cost(target, verify, precision, device).time_s() / m.target_step_s;
  if (spec.kind == DraftKind::kLayerTruncated) {
    ModelConfig draft = target;
    draft.n_layers = spec.layers;
    m.c = roofline::pass_cost(draft, step, precision, device).time_s() / m.target_step_s;
  } else if (spec.kind == DraftKind::kQuantized) {
    const quant::QuantScheme& q = spec.quant.scheme;
    const roofline::Precision p =
        roofline::Precision::weight_only(q.bits, q.group_size, !q.symmetric, precision);
    m.c = roofline::pass_cost(target, step, p, device).time_s() / m.target_step_s;
  }
  return m;
}

void add_modeled_rows(const std::vector<SweepRow>& rows, const ModelConfig& target, const DraftSpec& spec,
                      int context, const roofline::Precision& precision, const roofline::Device& device,
                      std::string& table, nlohmann::json& records) {
  char line[200];
  for (const SweepRow& r : rows) {
    const ModeledCosts m = modeled_costs(target, spec, r.gamma, context, precision, device);
    // Every round is charged a verify of γ + 1 rows, also one offering fewer drafts: at decode
    // sizes the verify is bandwidth-bound, so a few rows less change it by well under 1%.
    const double predicted = speculative::predicted_speedup(r.alpha, r.rounds_offering, m.c, m.verify);
    std::snprintf(line, sizeof line, "%-8s %-24s %5d %6.3f %9.3f %9.3f %8.2f %10.2f\n",
                  r.case_label.c_str(), r.draft.c_str(), r.gamma, r.alpha, m.c, m.verify,
                  r.measured_speedup, predicted);
    table += line;
    records.push_back({{"table", "modeled"}, {"case", r.case_label}, {"draft", r.draft},
                       {"gamma", r.gamma}, {"alpha", r.alpha}, {"c_modeled", m.c},
                       {"verify_modeled", m.verify}, {"target_step_modeled_s", m.target_step_s},
                       {"measured_speedup", r.measured_speedup},
                       {"predicted_speedup_modeled", predicted}, {"device", device.key}});
  }
}

}  // namespace nanoserve::ch06
