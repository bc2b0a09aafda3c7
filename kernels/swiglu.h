#pragma once
/// \file
/// \brief The SwiGLU gate of the Llama MLP (Shazeer 2020): `out = silu(gate) * up` on fp32
/// activations, between the W1/W3 projections and W2.

#include <cstdint>

#include "kernels/cuda_compat.h"

namespace nanoserve {

/// \brief `out[i] = gate[i] / (1 + exp(-gate[i])) * up[i]` for i in [0, n), on `stream`; the
/// same meaning as `oracle::swiglu`.
/// \param gate   (n) fp32, `W1 x`
/// \param up     (n) fp32, `W3 x`
/// \param n      number of values (rows × hidden_dim; 0 launches nothing)
/// \param out    (n) fp32; may alias `gate` or `up`
/// \param stream CUDA stream
/// \throws std::invalid_argument for a negative n
void launch_swiglu(const float* gate, const float* up, std::int64_t n, float* out,
                   cudaStream_t stream);

}  // namespace nanoserve
