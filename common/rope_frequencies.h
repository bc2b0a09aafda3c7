#pragma once
/// \file
/// \brief The rotation frequency of every RoPE pair of a model, with its `rope_scaling` applied:
/// the one table both the oracle's RoPE and the RoPE kernel's launcher rotate by.
///
/// Plain RoPE turns pair i of a head at `inv_freq[i] = theta^(-2i / head_dim)` radians per
/// position. Long-context checkpoints rescale those frequencies (`RopeScaling`):
///
///     linear   inv_freq[i] / factor                         (every pair slowed down)
///     llama3   wavelength λ = 2π / inv_freq[i], with  λ_lo = orig / low_freq_factor,
///                                                     λ_hi = orig / high_freq_factor:
///              λ < λ_hi            inv_freq[i]              (fast pairs kept)
///              λ > λ_lo            inv_freq[i] / factor     (slow pairs interpolated)
///              otherwise           (1 - s) inv_freq[i] / factor + s inv_freq[i],
///                                  s = (orig / λ - low_freq_factor)
///                                      / (high_freq_factor - low_freq_factor)
///
/// llama.cpp stores the llama3 rule of a GGUF file as per-pair divisors instead
/// (`RopeScaling::freq_factors`, the tensor `rope_freqs.weight`): pair i turns at
/// `inv_freq[i] / freq_factors[i]`, the divisors applied before `type`'s rule, as ggml's
/// `rope_ext` does (`theta = freq_scale * theta_base / freq_factor`).
///
/// Every step is the fp32 arithmetic of transformers' `_compute_llama3_parameters` (PyTorch
/// float32 tensors combined with Python scalars, a scalar divided by a tensor being the tensor's
/// reciprocal times the scalar), in the same order, so the table matches transformers' bit for
/// bit.

#include <vector>

#include "common/model_config.h"

namespace nanoserve {

/// \brief The unscaled frequencies `1 / theta^(2i / head_dim)` in fp32, i in [0, head_dim / 2).
std::vector<float> rope_base_frequencies(int head_dim, float theta);

/// \brief The base frequencies with `scaling` applied (see the file comment).
std::vector<float> rope_scaled_frequencies(int head_dim, float theta, const RopeScaling& scaling);

/// \brief The divisors llama.cpp's converter (`convert_hf_to_gguf.py`, `LlamaModel`) writes as
/// `rope_freqs.weight` for a llama3 `scaling`: 1 for kept pairs, `factor` for divided ones,
/// `1 / ((1 - s) / factor + s)` between; its arithmetic (fp32 tensors, Python scalars), in its
/// order. Throws `InvalidArgument` unless `scaling.type` is llama3.
std::vector<float> llama3_rope_freq_factors(int head_dim, float theta, const RopeScaling& scaling);

/// \brief `rope_scaled_frequencies(config.head_dim, config.rope_theta, config.rope_scaling)`.
std::vector<float> rope_frequencies(const ModelConfig& config);

}  // namespace nanoserve
