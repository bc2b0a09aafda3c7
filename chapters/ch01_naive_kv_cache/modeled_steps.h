#pragma once
/// \file
/// \brief Chapter 1's steps on a named GPU (`--cost-device`): the roofline model
/// (common/roofline/) of every forward pass the run made — the prompt, then each step of
/// no-cache (the whole prefix again) or naive-cache (one row over the cache) — beside the
/// time measured (simulated, on the CPU backend).

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "chapters/ch01_naive_kv_cache/step_probe.h"
#include "common/model_config.h"
#include "common/roofline/device.h"

namespace nanoserve::ch01 {

/// \brief One mode's steps: its name ("no-cache", "naive-cache") and what it recorded.
using ModeSteps = std::pair<std::string, const std::vector<StepRecord>*>;

/// \brief Prints, per mode, the modeled prefill and decode time of its steps next to the
/// measured ones, and the modeled per-kernel breakdown of the last naive-cache decode step (or
/// the last step); every step's modeled time goes to `records` (table "modeled_latency").
/// `dtype_bytes` is the storage of weights, activations and KV (4 fp32, 2 fp16/bf16).
void print_modeled_steps(const ModelConfig& config, int dtype_bytes, const std::vector<ModeSteps>& modes,
                         const roofline::Device& device, nlohmann::json& records);

}  // namespace nanoserve::ch01
