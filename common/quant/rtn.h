#pragma once
/// \file
/// \brief Round-to-nearest (RTN) quantization: every group's scale and zero point from its own
/// weights, every weight to its nearest code. The baseline GPTQ and AWQ are measured against,
/// and what they reduce to without calibration data (GPTQ with H = I, AWQ with α = 0).
///
/// RTN's weakness is the group range: one large weight stretches the scale of its whole group,
/// and the error it leaves (up to half a step per element) lands wherever the inputs are large.

#include <vector>

#include "common/quant/quantized_linear.h"

namespace nanoserve::quant {

/// \brief RTN of W (rows, cols) row-major under `scheme`. Throws `InvalidArgument` for a bad
/// scheme or shape, or scales that do not fit in fp16.
QuantizedLinear quantize_rtn(const float* w, int rows, int cols, const QuantScheme& scheme);

/// \brief `quantize_rtn(w, …).dequantize()` without packing ("fake quantization"): the fp32
/// weights (rows, cols) the quantized layer computes with. Used by searches that try many
/// candidates (AWQ's scale and clipping grids).
std::vector<float> fake_quantize_rtn(const float* w, int rows, int cols, const QuantScheme& scheme);

}  // namespace nanoserve::quant
