// The memory half of the simulated CUDA runtime: cudaMalloc/Free/Memcpy/Memset and pinned
// host memory. Definitions match the declarations of the real cuda_runtime_api.h, so host code
// links against these instead of -lcudart. All "asynchronous" variants complete before returning.
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "kernels/sim/device_memory.h"
#include "kernels/sim/graph_capture.h"
#include "kernels/sim/runtime_state.h"

namespace nanoserve::sim {
namespace {

std::string hex(const void* ptr) {
  char text[32];
  std::snprintf(text, sizeof text, "%p", ptr);
  return text;
}

// The simulated device's memory: the machine's physical memory, or the process's address-space
// limit (`ulimit -v`) when that is lower — device memory is host memory here, so a size
// checked against cudaMemGetInfo is checked against what the process can really get.
std::size_t physical_memory_bytes() {
  const std::size_t physical = static_cast<std::size_t>(sysconf(_SC_PHYS_PAGES)) *
                               static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  rlimit limit{};
  if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY &&
      limit.rlim_cur < physical) {
    return static_cast<std::size_t>(limit.rlim_cur);
  }
  return physical;
}

// Empty if [ptr, ptr+count) lies inside one live device allocation, else why not.
std::string check_device_range(const char* api, const char* role, const void* ptr,
                               std::size_t count) {
  const MemoryRegion region = find_region(MemoryKind::kDevice, ptr);
  if (!region.found) {
    return std::string(api) + ": " + role + " " + hex(ptr) +
           " is not inside any live cudaMalloc allocation";
  }
  const std::size_t offset = reinterpret_cast<std::uintptr_t>(ptr) - region.base;
  if (count > region.size - offset) {
    return std::string(api) + ": " + std::to_string(count) + " bytes at offset " +
           std::to_string(offset) + " of a " + std::to_string(region.size) + "-byte " + role +
           " allocation run past its end";
  }
  return {};
}

// Empty unless `ptr` is device memory although the copy kind says it is host memory.
std::string check_host_pointer(const char* api, const char* role, const void* ptr,
                               const char* kind) {
  if (!find_region(MemoryKind::kDevice, ptr).found) return {};
  return std::string(api) + ": " + role + " " + hex(ptr) + " is device memory but the kind is " +
         kind + " (arguments are (dst, src, count, kind))";
}

// Checks and performs a copy; with `perform` false only checks it (a copy being captured).
cudaError_t copy(const char* api, void* dst, const void* src, std::size_t count,
                 cudaMemcpyKind kind, bool perform = true) {
  if (count == 0) return cudaSuccess;
  if (dst == nullptr || src == nullptr) {
    return record_error(cudaErrorInvalidValue, std::string(api) + ": null pointer");
  }
  if (kind == cudaMemcpyDefault) {  // infer each side from the pointer, as with unified addressing
    const bool dst_device = find_region(MemoryKind::kDevice, dst).found;
    const bool src_device = find_region(MemoryKind::kDevice, src).found;
    kind = dst_device ? (src_device ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice)
                      : (src_device ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost);
  }
  std::string problem;
  switch (kind) {
    case cudaMemcpyHostToHost: break;
    case cudaMemcpyHostToDevice:
      problem = check_device_range(api, "destination", dst, count);
      if (problem.empty()) {
        problem = check_host_pointer(api, "source", src, "cudaMemcpyHostToDevice");
      }
      break;
    case cudaMemcpyDeviceToHost:
      problem = check_device_range(api, "source", src, count);
      if (problem.empty()) {
        problem = check_host_pointer(api, "destination", dst, "cudaMemcpyDeviceToHost");
      }
      break;
    case cudaMemcpyDeviceToDevice:
      problem = check_device_range(api, "destination", dst, count);
      if (problem.empty()) problem = check_device_range(api, "source", src, count);
      break;
    default:
      return record_error(cudaErrorInvalidMemcpyDirection,
                          std::string(api) + ": " + std::to_string(static_cast<int>(kind)) +
                              " is not a cudaMemcpyKind");
  }
  if (!problem.empty()) return record_error(cudaErrorInvalidValue, problem);
  if (perform) std::memmove(dst, src, count);
  return cudaSuccess;
}

cudaError_t fill(const char* api, void* ptr, int value, std::size_t count, bool perform = true) {
  if (count == 0) return cudaSuccess;
  const std::string problem = check_device_range(api, "destination", ptr, count);
  if (!problem.empty()) return record_error(cudaErrorInvalidValue, problem);
  if (perform) std::memset(ptr, value, count);
  return cudaSuccess;
}

cudaError_t alloc(const char* api, MemoryKind kind, void** ptr, std::size_t size) {
  if (ptr == nullptr) return record_error(cudaErrorInvalidValue, std::string(api) + ": null ptr");
  *ptr = nullptr;
  // Refuse what could never fit instead of letting the OS overcommit and then kill us.
  if (size > physical_memory_bytes()) {
    return record_error(cudaErrorMemoryAllocation,
                        std::string(api) + ": " + std::to_string(size) +
                            " bytes exceed the machine's physical memory");
  }
  *ptr = allocate(kind, size);
  if (*ptr == nullptr) {
    return record_error(cudaErrorMemoryAllocation,
                        std::string(api) + ": cannot allocate " + std::to_string(size) + " bytes");
  }
  return cudaSuccess;
}

cudaError_t free_checked(const char* api, MemoryKind kind, void* ptr) {
  if (ptr == nullptr || release(kind, ptr)) return cudaSuccess;
  return record_error(cudaErrorInvalidValue,
                      std::string(api) + ": " + hex(ptr) + " is not the start of a live " +
                          (kind == MemoryKind::kDevice ? "cudaMalloc" : "cudaMallocHost") +
                          " allocation (freed twice, or never allocated?)");
}

// A copy (stream null: synchronous, on the legacy stream) as CUDA treats it during a capture:
// checked, then recorded as a graph node instead of run, or refused.
cudaError_t enqueue_copy(const char* api, void* dst, const void* src, std::size_t count,
                         cudaMemcpyKind kind, cudaStream_t stream) {
  if (any_capture_active()) {
    if (const cudaError_t e = copy(api, dst, src, count, kind, false)) return e;
    GraphNode node;
    node.kind = NodeKind::kMemcpy;
    node.dst = dst;
    node.src = src;
    node.count = count;
    node.copy_kind = kind;
    bool recorded = false;
    const cudaError_t e = capture_or_run(api, stream, node, &recorded);
    if (e != cudaSuccess || recorded) return e;
  }
  return copy(api, dst, src, count, kind);
}

cudaError_t enqueue_fill(const char* api, void* ptr, int value, std::size_t count,
                         cudaStream_t stream) {
  if (any_capture_active()) {
    if (const cudaError_t e = fill(api, ptr, value, count, false)) return e;
    GraphNode node;
    node.kind = NodeKind::kMemset;
    node.dst = ptr;
    node.value = value;
    node.count = count;
    bool recorded = false;
    const cudaError_t e = capture_or_run(api, stream, node, &recorded);
    if (e != cudaSuccess || recorded) return e;
  }
  return fill(api, ptr, value, count);
}

}  // namespace
}  // namespace nanoserve::sim

using nanoserve::sim::MemoryKind;

cudaError_t cudaMalloc(void** devPtr, size_t size) {
  if (const cudaError_t e = nanoserve::sim::check_unsafe_during_capture("cudaMalloc")) return e;
  return nanoserve::sim::alloc("cudaMalloc", MemoryKind::kDevice, devPtr, size);
}

cudaError_t cudaFree(void* devPtr) {
  if (const cudaError_t e = nanoserve::sim::check_unsafe_during_capture("cudaFree")) return e;
  return nanoserve::sim::free_checked("cudaFree", MemoryKind::kDevice, devPtr);
}

cudaError_t cudaMallocHost(void** ptr, size_t size) {
  if (const cudaError_t e = nanoserve::sim::check_unsafe_during_capture("cudaMallocHost")) return e;
  return nanoserve::sim::alloc("cudaMallocHost", MemoryKind::kPinnedHost, ptr, size);
}

cudaError_t cudaHostAlloc(void** pHost, size_t size, unsigned int) {
  return nanoserve::sim::alloc("cudaHostAlloc", MemoryKind::kPinnedHost, pHost, size);
}

cudaError_t cudaFreeHost(void* ptr) {
  return nanoserve::sim::free_checked("cudaFreeHost", MemoryKind::kPinnedHost, ptr);
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind) {
  return nanoserve::sim::enqueue_copy("cudaMemcpy", dst, src, count, kind, nullptr);
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind,
                            cudaStream_t stream) {
  if (!nanoserve::sim::is_valid_stream(stream)) {
    return nanoserve::sim::record_error(cudaErrorInvalidResourceHandle,
                                        "cudaMemcpyAsync: the stream is not live");
  }
  return nanoserve::sim::enqueue_copy("cudaMemcpyAsync", dst, src, count, kind, stream);
}

cudaError_t cudaMemset(void* devPtr, int value, size_t count) {
  return nanoserve::sim::enqueue_fill("cudaMemset", devPtr, value, count, nullptr);
}

cudaError_t cudaMemsetAsync(void* devPtr, int value, size_t count, cudaStream_t stream) {
  if (!nanoserve::sim::is_valid_stream(stream)) {
    return nanoserve::sim::record_error(cudaErrorInvalidResourceHandle,
                                        "cudaMemsetAsync: the stream is not live");
  }
  return nanoserve::sim::enqueue_fill("cudaMemsetAsync", devPtr, value, count, stream);
}

cudaError_t cudaMemGetInfo(size_t* free, size_t* total) {
  if (free == nullptr || total == nullptr) {
    return nanoserve::sim::record_error(cudaErrorInvalidValue, "cudaMemGetInfo: null pointer");
  }
  *total = nanoserve::sim::physical_memory_bytes();
  const size_t used = nanoserve::sim::device_bytes_in_use();
  *free = used < *total ? *total - used : 0;
  return cudaSuccess;
}
