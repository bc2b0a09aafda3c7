// SwiGLU: out = silu(gate) * up, silu(g) = g / (1 + e^-g).
//
// Versions:
//   v01  one element per thread in a grid-stride loop: memory-bound (12 bytes per element), so
//        the accurate expf costs nothing measurable; the formula is the oracle's, term for term.
#include <cstdint>

#include "kernels/dtype.cuh"
#include "kernels/kernel_args.h"
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
    const float g = to_float(gate[i]);
    out[i] = from_float<A>(g / (1.0f + expf(-g)) * to_float(up[i]));
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
