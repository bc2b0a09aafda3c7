// The rest of the simulated CUDA runtime: errors, the (one) device and its properties, streams
// and events (synchronous; events read the host's wall clock), kernel attributes.
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_set>

#include "kernels/sim/elf_symbols.h"
#include "kernels/sim/graph_capture.h"
#include "kernels/sim/launch.h"
#include "kernels/sim/runtime_state.h"

/// The simulator's stream object (the real one is opaque to host code).
struct CUstream_st {
  unsigned flags;
};

/// The simulator's event object.
struct CUevent_st {
  unsigned flags;
  bool recorded;
  std::chrono::steady_clock::time_point time;
};

namespace nanoserve::sim {

long long monotonic_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

namespace {

struct ErrorText {
  cudaError_t code;
  const char* name;
  const char* description;
};

// The codes the simulator produces or a caller is likely to print, with CUDA's wording.
constexpr ErrorText kErrors[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInitializationError, "cudaErrorInitializationError", "initialization error"},
    {cudaErrorInvalidConfiguration, "cudaErrorInvalidConfiguration",
     "invalid configuration argument"},
    {cudaErrorInvalidMemcpyDirection, "cudaErrorInvalidMemcpyDirection",
     "invalid copy direction for memcpy"},
    {cudaErrorInvalidDeviceFunction, "cudaErrorInvalidDeviceFunction", "invalid device function"},
    {cudaErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {cudaErrorNotReady, "cudaErrorNotReady", "device not ready"},
    {cudaErrorIllegalAddress, "cudaErrorIllegalAddress",
     "an illegal memory access was encountered"},
    {cudaErrorLaunchOutOfResources, "cudaErrorLaunchOutOfResources",
     "too many resources requested for launch"},
    {cudaErrorAssert, "cudaErrorAssert", "device-side assert triggered"},
    {cudaErrorLaunchFailure, "cudaErrorLaunchFailure", "unspecified launch failure"},
    {cudaErrorNotSupported, "cudaErrorNotSupported", "operation not supported"},
    {cudaErrorIllegalState, "cudaErrorIllegalState",
     "the operation is not permitted in this state"},
    {cudaErrorStreamCaptureUnsupported, "cudaErrorStreamCaptureUnsupported",
     "operation not permitted when stream is capturing"},
    {cudaErrorStreamCaptureInvalidated, "cudaErrorStreamCaptureInvalidated",
     "operation failed due to a previous error during capture"},
    {cudaErrorStreamCaptureImplicit, "cudaErrorStreamCaptureImplicit",
     "operation would make the legacy stream depend on a capturing blocking stream"},
    {cudaErrorStreamCaptureWrongThread, "cudaErrorStreamCaptureWrongThread",
     "attempt to terminate a thread-local capture sequence from another thread"},
    {cudaErrorGraphExecUpdateFailure, "cudaErrorGraphExecUpdateFailure",
     "the graph update was not performed because it included changes which violated constraints "
     "specific to instantiated graph update"},
    {cudaErrorUnknown, "cudaErrorUnknown", "unknown error"},
};

const ErrorText* find_error(cudaError_t code) {
  for (const ErrorText& e : kErrors) {
    if (e.code == code) return &e;
  }
  return nullptr;
}

struct Events {
  std::mutex mutex;
  std::unordered_set<cudaEvent_t> live;
};

Events& events() {
  static Events e;
  return e;
}

bool is_live(cudaEvent_t event) {
  Events& e = events();
  std::lock_guard<std::mutex> lock(e.mutex);
  return e.live.count(event) == 1;
}

cudaError_t check_device(const char* api, int device) {
  if (device == 0) return cudaSuccess;
  return record_error(cudaErrorInvalidDevice, std::string(api) + ": device " +
                                                  std::to_string(device) +
                                                  " does not exist (the simulator has one)");
}

int multiprocessors() { return options().os_threads; }

}  // namespace
}  // namespace nanoserve::sim

namespace sim = nanoserve::sim;

cudaError_t cudaGetLastError(void) { return sim::take_last_error(); }
cudaError_t cudaPeekAtLastError(void) { return sim::peek_last_error(); }

const char* cudaGetErrorString(cudaError_t error) {
  const sim::ErrorText* e = sim::find_error(error);
  return e != nullptr ? e->description : "unrecognized error code";
}

const char* cudaGetErrorName(cudaError_t error) {
  const sim::ErrorText* e = sim::find_error(error);
  return e != nullptr ? e->name : "cudaErrorUnknown";
}

cudaError_t cudaGetDeviceCount(int* count) {
  if (count == nullptr) return sim::record_error(cudaErrorInvalidValue, "cudaGetDeviceCount: null");
  *count = 1;
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
  if (device == nullptr) return sim::record_error(cudaErrorInvalidValue, "cudaGetDevice: null");
  *device = 0;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) { return sim::check_device("cudaSetDevice", device); }
cudaError_t cudaDeviceSynchronize(void) {
  return sim::check_unsafe_during_capture("cudaDeviceSynchronize");
}
cudaError_t cudaDeviceReset(void) { return cudaSuccess; }

cudaError_t cudaRuntimeGetVersion(int* runtimeVersion) {
  if (runtimeVersion == nullptr) return cudaErrorInvalidValue;
  *runtimeVersion = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int* driverVersion) {
  if (driverVersion == nullptr) return cudaErrorInvalidValue;
  *driverVersion = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp* prop, int device) {
  if (prop == nullptr)
    return sim::record_error(cudaErrorInvalidValue, "cudaGetDeviceProperties: null");
  if (const cudaError_t e = sim::check_device("cudaGetDeviceProperties", device)) return e;
  using L = sim::DeviceLimits;
  std::memset(prop, 0, sizeof *prop);
  std::strncpy(prop->name, "nanoserve CUDA simulator (CPU)", sizeof prop->name - 1);
  prop->totalGlobalMem =
      static_cast<size_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<size_t>(sysconf(_SC_PAGESIZE));
  prop->sharedMemPerBlock = L::kSharedPerBlock;
  prop->sharedMemPerBlockOptin = L::kSharedPerBlockOptin;
  prop->sharedMemPerMultiprocessor = L::kSharedPerBlockOptin;
  prop->regsPerBlock = 65536;
  prop->regsPerMultiprocessor = 65536;
  prop->warpSize = 32;
  prop->maxThreadsPerBlock = static_cast<int>(L::kMaxThreadsPerBlock);
  prop->maxThreadsPerMultiProcessor = 2048;
  prop->maxBlocksPerMultiProcessor = 32;
  for (int i = 0; i < 3; ++i) {
    prop->maxThreadsDim[i] = static_cast<int>(L::kMaxBlockDim[i]);
    prop->maxGridSize[i] = static_cast<int>(L::kMaxGridDim[i]);
  }
  prop->major = L::kComputeMajor;
  prop->minor = L::kComputeMinor;
  prop->multiProcessorCount = sim::multiprocessors();
  prop->unifiedAddressing = 1;
  prop->concurrentKernels = 0;  // every launch runs to completion before the call returns
  // Clock rates, bus width and L2 size stay 0: a CPU has no meaningful GPU peak to report.
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, enum cudaDeviceAttr attr, int device) {
  if (value == nullptr)
    return sim::record_error(cudaErrorInvalidValue, "cudaDeviceGetAttribute: null");
  if (const cudaError_t e = sim::check_device("cudaDeviceGetAttribute", device)) return e;
  using L = sim::DeviceLimits;
  switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock: *value = L::kMaxThreadsPerBlock; break;
    case cudaDevAttrMaxBlockDimX: *value = L::kMaxBlockDim[0]; break;
    case cudaDevAttrMaxBlockDimY: *value = L::kMaxBlockDim[1]; break;
    case cudaDevAttrMaxBlockDimZ: *value = L::kMaxBlockDim[2]; break;
    case cudaDevAttrMaxGridDimX: *value = static_cast<int>(L::kMaxGridDim[0]); break;
    case cudaDevAttrMaxGridDimY: *value = L::kMaxGridDim[1]; break;
    case cudaDevAttrMaxGridDimZ: *value = L::kMaxGridDim[2]; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: *value = L::kSharedPerBlock; break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *value = L::kSharedPerBlockOptin; break;
    case cudaDevAttrWarpSize: *value = 32; break;
    case cudaDevAttrMultiProcessorCount: *value = sim::multiprocessors(); break;
    case cudaDevAttrComputeCapabilityMajor: *value = L::kComputeMajor; break;
    case cudaDevAttrComputeCapabilityMinor: *value = L::kComputeMinor; break;
    case cudaDevAttrClockRate:
    case cudaDevAttrMemoryClockRate:
    case cudaDevAttrGlobalMemoryBusWidth:
    case cudaDevAttrL2CacheSize: *value = 0; break;  // no meaningful GPU peak on a CPU
    default:
      return sim::record_error(cudaErrorInvalidValue,
                               "cudaDeviceGetAttribute: attribute " +
                                   std::to_string(static_cast<int>(attr)) +
                                   " is not simulated (add it in kernels/sim/cudart_sim.cpp)");
  }
  return cudaSuccess;
}

cudaError_t cudaFuncSetAttribute(const void* func, enum cudaFuncAttribute attr, int value) {
  if (func == nullptr)
    return sim::record_error(cudaErrorInvalidDeviceFunction, "cudaFuncSetAttribute: null kernel");
  if (attr == cudaFuncAttributePreferredSharedMemoryCarveout) return cudaSuccess;
  if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize) {
    return sim::record_error(cudaErrorInvalidValue, "cudaFuncSetAttribute: attribute " +
                                                        std::to_string(static_cast<int>(attr)) +
                                                        " is not simulated");
  }
  // As on hardware, the opt-in maximum is shared with the kernel's static shared memory.
  const size_t max_dynamic =
      sim::DeviceLimits::kSharedPerBlockOptin - sim::static_shared_bytes(func);
  if (value < 0 || static_cast<size_t>(value) > max_dynamic) {
    return sim::record_error(cudaErrorInvalidValue,
                             "cudaFuncSetAttribute: MaxDynamicSharedMemorySize " +
                                 std::to_string(value) + " is outside [0, " +
                                 std::to_string(max_dynamic) + "] (" +
                                 std::to_string(sim::DeviceLimits::kSharedPerBlockOptin) +
                                 " per block less the kernel's static shared memory)");
  }
  sim::set_max_dynamic_smem(func, static_cast<size_t>(value));
  return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* pStream, unsigned int flags) {
  if (pStream == nullptr) return sim::record_error(cudaErrorInvalidValue, "cudaStreamCreate: null");
  *pStream = new CUstream_st{flags};
  sim::add_stream(*pStream);
  return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t* pStream) {
  return cudaStreamCreateWithFlags(pStream, cudaStreamDefault);
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  if (stream == nullptr || !sim::remove_stream(stream)) {
    return sim::record_error(cudaErrorInvalidResourceHandle,
                             "cudaStreamDestroy: not a live stream (destroyed twice?)");
  }
  sim::drop_capture(stream);
  delete stream;
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  if (!sim::is_valid_stream(stream)) {
    return sim::record_error(cudaErrorInvalidResourceHandle,
                             "cudaStreamSynchronize: not a live stream");
  }
  // Everything already ran when it was enqueued; a capturing stream cannot be waited for.
  return sim::check_sync_during_capture("cudaStreamSynchronize", stream);
}

cudaError_t cudaStreamQuery(cudaStream_t stream) {
  if (!sim::is_valid_stream(stream)) {
    return sim::record_error(cudaErrorInvalidResourceHandle, "cudaStreamQuery: not a live stream");
  }
  return sim::check_sync_during_capture("cudaStreamQuery", stream);
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int) {
  if (!sim::is_valid_stream(stream) || !sim::is_live(event)) {
    return sim::record_error(cudaErrorInvalidResourceHandle,
                             "cudaStreamWaitEvent: not a live stream/event");
  }
  return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  if (event == nullptr) return sim::record_error(cudaErrorInvalidValue, "cudaEventCreate: null");
  *event = new CUevent_st{flags, false, {}};
  sim::Events& e = sim::events();
  std::lock_guard<std::mutex> lock(e.mutex);
  e.live.insert(*event);
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t* event) {
  return cudaEventCreateWithFlags(event, cudaEventDefault);
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  sim::Events& e = sim::events();
  {
    std::lock_guard<std::mutex> lock(e.mutex);
    if (e.live.erase(event) == 0) {
      return sim::record_error(cudaErrorInvalidResourceHandle,
                               "cudaEventDestroy: not a live event (destroyed twice?)");
    }
  }
  delete event;
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  if (!sim::is_live(event) || !sim::is_valid_stream(stream)) {
    return sim::record_error(cudaErrorInvalidResourceHandle,
                             "cudaEventRecord: not a live event/stream");
  }
  event->recorded = true;
  event->time = std::chrono::steady_clock::now();
  return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  if (!sim::is_live(event)) {
    return sim::record_error(cudaErrorInvalidResourceHandle,
                             "cudaEventSynchronize: not a live event");
  }
  return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t event) { return cudaEventSynchronize(event); }

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (ms == nullptr) return sim::record_error(cudaErrorInvalidValue, "cudaEventElapsedTime: null");
  if (!sim::is_live(start) || !sim::is_live(end) || !start->recorded || !end->recorded ||
      ((start->flags | end->flags) & cudaEventDisableTiming) != 0) {
    return sim::record_error(cudaErrorInvalidResourceHandle,
                             "cudaEventElapsedTime: both events must be live, recorded and timed");
  }
  *ms = std::chrono::duration<float, std::milli>(end->time - start->time).count();
  return cudaSuccess;
}
