#pragma once
/// \file
/// \brief The tables chapter 5 prints (and writes as JSON records): the method × format results
/// of a model, its activation outlier statistics, AWQ's choices, and the computed weight
/// memory of 7B–70B shapes.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/format_bytes.h"

#include "chapters/ch05_quantization/sweep.h"

namespace nanoserve::ch05 {

/// \brief The results table of one model (`rows[0]` is the fp32 reference).
void print_results(const ModelData& data, const std::vector<SweepRow>& rows, const DataOptions& o,
                   nlohmann::json& records);

/// \brief How uneven the channels of every linear's input are on the calibration data (what
/// AWQ's scaling feeds on), per block.
void print_outliers(const ModelData& data, nlohmann::json& records);

/// \brief The α AWQ chose per block for every AWQ row.
void print_awq_choices(const ModelData& data, const std::vector<SweepRow>& rows, nlohmann::json& records);

/// \brief Weight bytes of the Llama-2 7B/13B/70B shapes at each format — computed from the
/// shapes (engine/quantized_memory.h), not measured.
void print_memory(nlohmann::json& records);

}  // namespace nanoserve::ch05
