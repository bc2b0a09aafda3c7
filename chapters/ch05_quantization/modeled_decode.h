#pragma once
/// \file
/// \brief Chapter 5's decode speed predicted on a named GPU (`--cost-device`): the roofline
/// model (common/roofline/) of one batch-1 decode step per format — of the model measured and
/// of the Llama-2-7B shape — next to the decode speed measured (simulated, on the CPU
/// backend) through the kernels. Quantized rows are modeled as W8A16/W4A16: codes and fp16
/// scales for the linears, fp16 for everything else (the GPU path this chapter's kernels are
/// named for), so INT4 is compared with fp16, not with this build's fp32 activations.

#include <vector>

#include <nlohmann/json.hpp>

#include "chapters/ch05_quantization/sweep.h"
#include "common/roofline/device.h"
#include "common/roofline/pass_cost.h"

namespace nanoserve::ch05 {

/// \brief The precision a row of the table is modeled in: fp32 or fp16 dense; weight-only
/// INT8/INT4 over fp16 for the quantized methods.
roofline::Precision modeled_precision(const SweepConfig& config);

/// \brief Prints, per row of `rows`, the modeled decode step (ms, tok/s, speed vs fp16) of
/// `data`'s model at its prompt's context and of Llama-2-7B at context 512, and the measured
/// tok/s; appends records with table "modeled_decode".
void print_modeled_decode(const ModelData& data, const std::vector<SweepRow>& rows,
                          const roofline::Device& device, nlohmann::json& records);

}  // namespace nanoserve::ch05
