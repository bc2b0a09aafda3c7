#pragma once
/// \file
/// \brief Chapter 6's speedups predicted on a named GPU (`--cost-device`): the paper's formula
/// (`speculative::predicted_speedup`) with α as measured and the costs from the roofline model
/// (common/roofline/) instead of from CPU timings — c = one draft decode step / one target
/// decode step, and a verify = one target pass over γ + 1 rows / one target decode step.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chapters/ch06_speculative_decoding/draft_factory.h"
#include "chapters/ch06_speculative_decoding/spec_sweep.h"
#include "common/model_config.h"
#include "common/roofline/device.h"
#include "common/roofline/pass_cost.h"

namespace nanoserve::ch06 {

/// \brief The roofline costs of one draft at one γ, relative to a target decode step.
struct ModeledCosts {
  double target_step_s = 0;  ///< one target decode step (1 row at `context`)
  double c = 0;              ///< draft decode step / target step (0 for n-gram)
  double verify = 0;         ///< target pass over γ + 1 rows at `context` / target step
};

/// \brief The costs of `spec` drafting for `target` at `gamma`, every sequence at `context`
/// positions, in `precision` (a quantized draft keeps `precision` for what it does not
/// quantize); a layer-truncated draft is the target with its first K blocks.
ModeledCosts modeled_costs(const ModelConfig& target, const DraftSpec& spec, int gamma, int context,
                           const roofline::Precision& precision, const roofline::Device& device);

/// \brief One line of the modeled table per row of `rows` (all of draft `spec`): α as
/// measured, c and verify from `modeled_costs`, and `predicted_speedup(α, rounds, c, verify)`.
/// Appends the lines to `table` and one record per row (table "modeled") to `records`.
void add_modeled_rows(const std::vector<SweepRow>& rows, const ModelConfig& target, const DraftSpec& spec,
                      int context, const roofline::Precision& precision, const roofline::Device& device,
                      std::string& table, nlohmann::json& records);

}  // namespace nanoserve::ch06
