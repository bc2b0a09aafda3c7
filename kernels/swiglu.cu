// SwiGLU: out = silu(gate) * up, silu(g) = g / (1 + e^-g).
//
// Versions:
//   v01  one element per thread in a grid-stride loop: memory-bound (12 bytes per element), so
//        the accurate expf costs nothing measurable; the formula is the oracle's, term for term
//        (silu_mul, kernels/linear_common.cuh).
//   v02  no kernel: the gate is the epilogue of the gate+up projection (Epilogue::kSwiGLU of
//        launch_linear / launch_quant_linear over W = [W1; W3]), which computes both sums of an
//        output and stores silu_mul of them. The (rows, 2 hidden) intermediate is never written
//        nor read again: 3 · rows · hidden activations less traffic, and one launch less per
//        layer. Same function, same fp32 sums: bitwise equal to v01 after two fp32 linears.
#include <cstdint>

#include "kernels/dtype.cuh"
#include "kernels/kernel_args.h"
#include "kernels/linear_common.cuh"
#include "kernels/swiglu.h"

namespace nanoserve {
namespace {

// ---------------------------------------------------------------------------------------------
// kernels

// gate (n), up (n), out (n) — out may alias either input: each element is read, then written,
// by the same thread.
template <typename A>
__global__ void swiglu_kernel_v01(const A* gate, const A* up, std::int64_t n, A* out) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    out[i] = from_float<A>(silu_mul(to_float(gate[i]), to_float(up[i])));
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// launchers

template <typename A>
void launch_swiglu(const nondeduced_t<A>* gate, const nondeduced_t<A>* up, std::int64_t n,
                   nondeduced_t<A>* out,
                   cudaStream_t stream) {
  kargs::require_at_least("launch_swiglu", "n", n, 0);
  if (n == 0) return;
  constexpr int kBlock = 256;
  // One pass over n when it fits, capped: the grid-stride loop covers the rest.
  const std::int64_t blocks = (n + kBlock - 1) / kBlock;
  const unsigned grid = static_cast<unsigned>(blocks < 65535 ? blocks : 65535);
  launch(swiglu_kernel_v01<A>, dim3(grid), dim3(kBlock), 0, stream, gate, up, n, out);
}

#define NANOSERVE_INSTANTIATE_SWIGLU(A) \
  template void launch_swiglu<A>(const A*, const A*, std::int64_t, A*, cudaStream_t);
NANOSERVE_FOR_EACH_STORAGE_TYPE(NANOSERVE_INSTANTIATE_SWIGLU)
#undef NANOSERVE_INSTANTIATE_SWIGLU

}  // namespace nanoserve
