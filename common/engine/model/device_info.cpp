#include "common/engine/model/device_info.h"

#include "common/error.h"
#include "common/format_bytes.h"
#include "kernels/cuda_compat.h"

namespace nanoserve::engine {

const char* kernel_backend() { return NANOSERVE_REAL_CUDA ? "cuda" : "sim"; }

const char* default_dtype() { return NANOSERVE_REAL_CUDA ? "bf16" : "fp32"; }

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

std::size_t free_device_memory() {
  std::size_t free = 0, total = 0;
  const cudaError_t e = cudaMemGetInfo(&free, &total);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    throw Error(std::string("no usable CUDA device: cudaMemGetInfo failed: ") + cuda_error_text(e));
  }
  return free;
}

void check_device_memory(double bytes, const std::string& what) {
  const double free = double(free_device_memory());
  if (!(bytes >= 0) || bytes > free) {
    throw InvalidArgument(what + " needs " + format_bytes(bytes) + " of device memory, but only " +
                          format_bytes(free) + " is free on " + device_name());
  }
}

}  // namespace nanoserve::engine
