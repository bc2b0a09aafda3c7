#pragma once
/// \file
/// \brief Chapter 2's chat sessions on a named GPU (`--cost-device`): the roofline model
/// (common/roofline/) of every turn — its prompt rows that were computed (all of them without
/// prefix caching, the uncached tail with it) and its reply's decode steps — summed per mode,
/// beside the CPU time the simulator took.

#include <nlohmann/json.hpp>

#include "chapters/ch02_paged_kv_cache/multiturn.h"
#include "common/model_config.h"
#include "common/roofline/device.h"

namespace nanoserve::ch02 {

/// \brief Modeled seconds of all turns of `run` (one sequence at a time, as the run was).
double modeled_multiturn_seconds(const ModelConfig& config, int dtype_bytes, const MultiturnRun& run,
                                 const roofline::Device& device);

/// \brief Prints the modeled time of both modes next to their CPU times and appends a record
/// (table "modeled_multiturn").
void print_modeled_multiturn(const ModelConfig& config, int dtype_bytes, const MultiturnRun& off,
                             const MultiturnRun& on, const roofline::Device& device,
                             nlohmann::json& records);

}  // namespace nanoserve::ch02
