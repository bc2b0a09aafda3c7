// Residual add: x += residual, elementwise.
//
// Versions:
//   v01  one element per thread in a grid-stride loop; memory-bound, the baseline every
//        elementwise kernel starts from.
//
// Also the smallest complete example of a kernel file: it includes only cuda_compat.h (here
// through dtype.cuh, the shared fp32 <-> storage conversions), launches only through
// launch(...), and compiles unchanged with nvcc and with the CPU simulator.
#include <stdexcept>
#include <string>

#include "kernels/dtype.cuh"
#include "kernels/residual_add.h"

namespace nanoserve {
namespace {

// ---------------------------------------------------------------------------------------------
// kernels

// x (n,), residual (n,)
template <typename T>
__global__ void residual_add_kernel_v01(T* __restrict__ x, const T* __restrict__ residual,
                                        std::int64_t n) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    x[i] = from_float<T>(to_float(x[i]) + to_float(residual[i]));
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// launchers

template <typename T>
void launch_residual_add(T* x, const T* residual, std::int64_t n, cudaStream_t stream) {
  if (n < 0) {
    throw std::invalid_argument("launch_residual_add: n = " + std::to_string(n) + " must be >= 0");
  }
  if (n == 0) return;
  constexpr int kBlock = 256;
  // Enough blocks to cover n once, capped: the grid-stride loop does the rest.
  const std::int64_t blocks = (n + kBlock - 1) / kBlock;
  const unsigned grid = static_cast<unsigned>(blocks < 65535 ? blocks : 65535);
  launch(residual_add_kernel_v01<T>, dim3(grid), dim3(kBlock), 0, stream, x, residual, n);
}

template void launch_residual_add<float>(float*, const float*, std::int64_t, cudaStream_t);
template void launch_residual_add<__half>(__half*, const __half*, std::int64_t, cudaStream_t);
template void launch_residual_add<__nv_bfloat16>(__nv_bfloat16*, const __nv_bfloat16*, std::int64_t,
                                                 cudaStream_t);

}  // namespace nanoserve
