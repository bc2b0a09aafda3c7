#pragma once
/// \file
/// \brief `--cost-device NAME`, the flag every chapter program shares: the GPU of the roofline
/// table (common/roofline/device.h) whose modeled time the program prints next to the time it
/// measured or simulated, and writes into its JSON (docs/roofline.md).

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <string>

#include "common/roofline/device.h"
#include "common/roofline/pass_cost.h"

namespace nanoserve::cli {

/// \brief Adds `--cost-device NAME` to `app`, writing the key into `key` (empty: no model).
/// An unknown name is refused by the parser with the list of known ones.
CLI::Option* add_cost_device_flag(CLI::App& app, std::string& key);

/// \brief The device `key` names, or nullptr for an empty key. Throws `InvalidArgument` for
/// an unknown key (as `roofline::find_device`).
const roofline::Device* cost_device(const std::string& key);

/// \brief What a modeled figure is called in a table: "modeled (roofline, H200)".
std::string modeled_label(const roofline::Device& device);

/// \brief The JSON a report carries under "cost_model": the device's figures and source, the
/// assumptions, and `precision`'s label.
nlohmann::json cost_model_json(const roofline::Device& device, const roofline::Precision& precision,
                               const roofline::Assumptions& assumptions = {});

}  // namespace nanoserve::cli
