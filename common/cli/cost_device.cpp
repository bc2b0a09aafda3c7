#include "common/cli/cost_device.h"

#include "common/error.h"

namespace nanoserve::cli {

CLI::Option* add_cost_device_flag(CLI::App& app, std::string& key) {
  return app
      .add_option("--cost-device", key,
                  "also print the time a roofline model gives on this GPU (" +
                      roofline::device_keys() + "; docs/roofline.md)")
      ->check(CLI::Validator(
          [](std::string& value) -> std::string {
            try {
              (void)roofline::find_device(value);
              return "";
            } catch (const InvalidArgument&) {
              return "unknown device '" + value + "' (known: " + roofline::device_keys() + ")";
            }
          },
          "NAME"));
}

const roofline::Device* cost_device(const std::string& key) {
  return key.empty() ? nullptr : &roofline::find_device(key);
}

std::string modeled_label(const roofline::Device& device) {
  return std::string("modeled (roofline, ") + device.label + ")";
}

nlohmann::json cost_model_json(const roofline::Device& d, const roofline::Precision& p,
                               const roofline::Assumptions& a) {
  return {{"device", d.key},
          {"device_name", d.name},
          {"memory_bandwidth_bytes_per_s", d.memory_bandwidth},
          {"tensor_flops", d.tensor_flops},
          {"fp32_flops", d.fp32_flops},
          {"source", d.source},
          {"precision", p.label()},
          {"bandwidth_fraction", a.bandwidth_fraction},
          {"compute_fraction", a.compute_fraction},
          {"launch_s", a.launch_s},
          {"cuda_graph", a.cuda_graph}};
}

}  // namespace nanoserve::cli
