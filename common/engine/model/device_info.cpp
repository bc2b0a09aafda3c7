#include "common/engine/model/device_info.h"

#include "common/error.h"
#include "kernels/cuda_compat.h"

namespace nanoserve::engine {

const char* kernel_backend() { return NANOSERVE_REAL_CUDA ? "cuda" : "sim"; }

bool device_available() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky "no device" error for later calls
    return false;
  }
  return count > 0;
}

std::string device_name() {
  cudaDeviceProp prop{};
  const cudaError_t e = cudaGetDeviceProperties(&prop, 0);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    throw Error(std::string("no usable CUDA device: cudaGetDeviceProperties(0) failed: ") +
                cuda_error_text(e));
  }
#if NANOSERVE_REAL_CUDA
  return prop.name;
#else
  return std::string("CPU simulator (") + prop.name + ")";
#endif
}

}  // namespace nanoserve::engine
