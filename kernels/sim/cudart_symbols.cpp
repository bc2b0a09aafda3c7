// The simulated runtime's symbol and pitched copies: cudaMemcpyToSymbol / FromSymbol,
// cudaGetSymbolAddress, cudaMemcpy2D and cudaMemcpy2DAsync. In the simulator a __constant__ or __device__ variable is
// an ordinary global of the process, so its address is the "device" address of the symbol.
#include <cstring>
#include <string>

#include "kernels/sim/device_memory.h"
#include "kernels/sim/runtime_state.h"

namespace nanoserve::sim {
namespace {

bool is_device(const void* ptr, std::size_t count) {
  const MemoryRegion region = find_region(MemoryKind::kDevice, ptr);
  if (!region.found) return false;
  const std::size_t offset = reinterpret_cast<std::uintptr_t>(ptr) - region.base;
  return count <= region.size - offset;
}

// The other side of a symbol copy: host memory for the host kinds, a device range for
// DeviceToDevice (cudaMemcpyDefault accepts both). Empty if fine, else why not.
std::string check_other_side(const char* api, const char* role, const void* ptr,
                             std::size_t count, cudaMemcpyKind kind, cudaMemcpyKind host_kind) {
  if (kind == cudaMemcpyDefault) return {};
  if (kind == cudaMemcpyDeviceToDevice) {
    if (!is_device(ptr, count)) {
      return std::string(api) + ": the " + role +
             " is not a device range of that size, but the kind is cudaMemcpyDeviceToDevice";
    }
    return {};
  }
  if (kind != host_kind) {
    return std::string(api) + ": kind " + std::to_string(static_cast<int>(kind)) +
           " is not allowed (use " +
           (host_kind == cudaMemcpyHostToDevice ? "cudaMemcpyHostToDevice" : "cudaMemcpyDeviceToHost") +
           ", cudaMemcpyDeviceToDevice or cudaMemcpyDefault)";
  }
  if (find_region(MemoryKind::kDevice, ptr).found) {
    return std::string(api) + ": the " + role + " is device memory but the kind says host memory";
  }
  return {};
}

}  // namespace
}  // namespace nanoserve::sim

using nanoserve::sim::record_error;

cudaError_t cudaMemcpyToSymbol(const void* symbol, const void* src, size_t count, size_t offset,
                               enum cudaMemcpyKind kind) {
  if (symbol == nullptr) return record_error(cudaErrorInvalidSymbol, "cudaMemcpyToSymbol: null symbol");
  if (count == 0) return cudaSuccess;
  if (src == nullptr) return record_error(cudaErrorInvalidValue, "cudaMemcpyToSymbol: null source");
  const bool direction_ok = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice ||
                            kind == cudaMemcpyDefault;
  const std::string why = nanoserve::sim::check_other_side("cudaMemcpyToSymbol", "source", src,
                                                           count, kind, cudaMemcpyHostToDevice);
  if (!why.empty()) {
    return record_error(direction_ok ? cudaErrorInvalidValue : cudaErrorInvalidMemcpyDirection, why);
  }
  std::memcpy(static_cast<unsigned char*>(const_cast<void*>(symbol)) + offset, src, count);
  return cudaSuccess;
}

cudaError_t cudaMemcpyFromSymbol(void* dst, const void* symbol, size_t count, size_t offset,
                                 enum cudaMemcpyKind kind) {
  if (symbol == nullptr) {
    return record_error(cudaErrorInvalidSymbol, "cudaMemcpyFromSymbol: null symbol");
  }
  if (count == 0) return cudaSuccess;
  if (dst == nullptr) {
    return record_error(cudaErrorInvalidValue, "cudaMemcpyFromSymbol: null destination");
  }
  const bool direction_ok = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice ||
                            kind == cudaMemcpyDefault;
  const std::string why = nanoserve::sim::check_other_side("cudaMemcpyFromSymbol", "destination",
                                                           dst, count, kind, cudaMemcpyDeviceToHost);
  if (!why.empty()) {
    return record_error(direction_ok ? cudaErrorInvalidValue : cudaErrorInvalidMemcpyDirection, why);
  }
  std::memcpy(dst, static_cast<const unsigned char*>(symbol) + offset, count);
  return cudaSuccess;
}

cudaError_t cudaGetSymbolAddress(void** devPtr, const void* symbol) {
  if (devPtr == nullptr) return record_error(cudaErrorInvalidValue, "cudaGetSymbolAddress: null result");
  if (symbol == nullptr) {
    return record_error(cudaErrorInvalidSymbol, "cudaGetSymbolAddress: null symbol");
  }
  *devPtr = const_cast<void*>(symbol);
  return cudaSuccess;
}

cudaError_t cudaMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                         size_t height, enum cudaMemcpyKind kind) {
  if (width > dpitch || width > spitch) {
    return record_error(cudaErrorInvalidPitchValue,
                        "cudaMemcpy2D: width " + std::to_string(width) +
                            " bytes exceeds a pitch (dpitch " + std::to_string(dpitch) +
                            ", spitch " + std::to_string(spitch) + ")");
  }
  if (width == 0 || height == 0) return cudaSuccess;
  // Row by row through cudaMemcpy, so every row gets its checks (device side inside one
  // allocation, host pointers not device memory, the kind).
  for (size_t row = 0; row < height; ++row) {
    const cudaError_t status =
        cudaMemcpy(static_cast<unsigned char*>(dst) + row * dpitch,
                   static_cast<const unsigned char*>(src) + row * spitch, width, kind);
    if (status != cudaSuccess) return status;
  }
  return cudaSuccess;
}

cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch,
                              size_t width, size_t height, enum cudaMemcpyKind kind,
                              cudaStream_t stream) {
  if (width > dpitch || width > spitch) {
    return record_error(cudaErrorInvalidPitchValue,
                        "cudaMemcpy2DAsync: width " + std::to_string(width) +
                            " bytes exceeds a pitch (dpitch " + std::to_string(dpitch) +
                            ", spitch " + std::to_string(spitch) + ")");
  }
  // Row by row through cudaMemcpyAsync: each row gets its checks, the stream's, and, during a
  // capture, a node of its own.
  for (size_t row = 0; row < height && width > 0; ++row) {
    const cudaError_t status =
        cudaMemcpyAsync(static_cast<unsigned char*>(dst) + row * dpitch,
                        static_cast<const unsigned char*>(src) + row * spitch, width, kind, stream);
    if (status != cudaSuccess) return status;
  }
  return cudaSuccess;
}
