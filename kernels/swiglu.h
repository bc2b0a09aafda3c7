#pragma once
/// \file
/// \brief The SwiGLU gate of the Llama MLP (Shazeer 2020): `out = silu(gate) * up` on activations
/// (fp32, fp16 or bf16), between the W1/W3 projections and W2.
///
/// | version | idea it adds |
/// |---|---|
/// | v01 `launch_swiglu` | one element per thread over the stored gate and up activations |
/// | v02 `Epilogue::kSwiGLU` | no kernel of its own: the epilogue of the gate+up projection over W = [W1; W3] (`launch_linear`, `launch_quant_linear`), so gate and up are never stored |

#include <cstdint>

#include "kernels/cuda_compat.h"
#include "kernels/dtype.cuh"

namespace nanoserve {

/// \brief `out[i] = gate[i] / (1 + exp(-gate[i])) * up[i]` for i in [0, n), on `stream`; the
/// same meaning as `oracle::swiglu`; computed in fp32, rounded once to A.
/// \tparam A storage type of the activations: float, __half or __nv_bfloat16
/// \param gate   (n) `W1 x`
/// \param up     (n) `W3 x`
/// \param n      number of values (rows × hidden_dim; 0 launches nothing)
/// \param out    (n) may alias `gate` or `up`
/// \param stream CUDA stream
/// \throws std::invalid_argument for a negative n
template <typename A = float>
void launch_swiglu(const nondeduced_t<A>* gate, const nondeduced_t<A>* up, std::int64_t n,
                   nondeduced_t<A>* out,
                   cudaStream_t stream);

}  // namespace nanoserve
