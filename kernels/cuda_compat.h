#pragma once
/// \file
/// \brief The one header kernel files include: the same CUDA source compiles with nvcc for a GPU
/// (`cuda` preset) or with g++ against the CPU simulator in kernels/sim (`sim`, `asan` presets).
///
/// What a kernel file may use beyond plain CUDA C++ (docs/design.md, "Rules for kernel authors"):
/// - `launch(kernel, grid, block, smem_bytes, stream, args...)` instead of `<<<…>>>`;
/// - `NS_DYNAMIC_SHARED(T, name)` instead of `extern __shared__ T name[]`;
/// - `CUDA_CHECK(expr)` around every runtime call.
///
/// Error policy: both throw nanoserve::CudaError (a std::runtime_error carrying the
/// `cudaError_t`), whose message names the file and line of the call, the CUDA error and — in the
/// simulator — why it failed (e.g. "threads wait at different __syncthreads: …"). On a GPU a
/// fault inside a running kernel surfaces at the next synchronizing call, as usual; in the
/// simulator every launch is synchronous, so `launch` reports it directly.

#include <cstddef>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

#if defined(__CUDACC__) || defined(NANOSERVE_BACKEND_CUDA)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#if defined(__CUDACC__)
#include <cooperative_groups.h>  // the simulator: kernels/sim/cooperative_groups.h
#include <cooperative_groups/reduce.h>
#include <mma.h>  // nvcuda::wmma (the simulator provides it in kernels/sim/wmma.h)
#include <cuda_pipeline_primitives.h>  // __pipeline_memcpy_async (kernels/sim/pipeline.h)
#endif
/// \brief 1 when kernels run on a real GPU (nvcc / `cuda` preset), 0 in the simulator.
#define NANOSERVE_REAL_CUDA 1
#else
#include "kernels/sim/cuda_sim.h"
#define NANOSERVE_REAL_CUDA 0
#endif

namespace nanoserve {

/// \brief A failed CUDA runtime call or kernel launch.
class CudaError : public std::runtime_error {
 public:
  /// \brief Wraps the error code and a complete message.
  CudaError(cudaError_t code, const std::string& message)
      : std::runtime_error(message), code_(code) {}
  /// \brief The CUDA error code (e.g. cudaErrorInvalidValue).
  cudaError_t code() const { return code_; }

 private:
  cudaError_t code_;
};

/// \brief "cudaErrorX (description)", plus the simulator's explanation when it has one.
inline std::string cuda_error_text(cudaError_t code) {
  std::string text = std::string(cudaGetErrorName(code)) + " (" + cudaGetErrorString(code) + ")";
#if !NANOSERVE_REAL_CUDA
  if (sim::last_error_detail_code() == code && !sim::last_error_detail().empty()) {
    text += ": " + sim::last_error_detail();
  }
#endif
  return text;
}

/// \brief Throws CudaError naming the file, the line and `what` unless `code` is cudaSuccess.
inline void cuda_check(cudaError_t code, const char* what, const char* file, int line) {
  if (code != cudaSuccess) {
    throw CudaError(code, std::string(file) + ":" + std::to_string(line) + ": " + what +
                              " failed: " + cuda_error_text(code));
  }
}

/// \brief A launch's stream, plus the file and line of the `launch(...)` call (captured implicitly by
/// the converting constructor's default arguments, so callers just pass a `cudaStream_t`).
struct LaunchStream {
  /// \brief Converts from the stream argument of `launch(...)`.
  LaunchStream(cudaStream_t s,  // NOLINT: implicit on purpose
               const char* call_file = __builtin_FILE(), int call_line = __builtin_LINE())
      : stream(s), file(call_file), line(call_line) {}
  cudaStream_t stream;  ///< where the kernel runs (0 = legacy default stream)
  const char* file;     ///< file of the launch call
  int line;             ///< line of the launch call
};

namespace detail {
/// \brief Runs one simulated thread of a launch: calls the kernel with a copy of the arguments.
template <typename Closure>
void run_closure(const void* closure) {
  const Closure& c = *static_cast<const Closure*>(closure);
  std::apply(c.kernel, c.args);
}
/// \brief Copies a launch's closure (its kernel arguments, by value) for a captured graph.
template <typename Closure>
void* copy_closure(const void* closure) {
  return new Closure(*static_cast<const Closure*>(closure));
}
/// \brief Frees a closure made by copy_closure.
template <typename Closure>
void free_closure(void* closure) {
  delete static_cast<Closure*>(closure);
}
}  // namespace detail

#if defined(__CUDACC__) || !NANOSERVE_REAL_CUDA
/// \brief Launches `kernel<<<grid, block, smem_bytes, stream>>>(args...)` and throws CudaError
/// if the launch fails (bad configuration, too much shared memory; in the simulator also any
/// fault while the kernel ran: deadlock, divergent barrier, exception, …).
template <typename... Params, typename... Args>
void launch(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t smem_bytes,
            LaunchStream stream, Args&&... args) {
  static_assert(sizeof...(Params) == sizeof...(Args), "launch: wrong number of kernel arguments");
#if defined(__CUDACC__)
  kernel<<<grid, block, smem_bytes, stream.stream>>>(std::forward<Args>(args)...);
#else
  struct Closure {
    void (*kernel)(Params...);
    std::tuple<Params...> args;
  };
  const Closure closure{kernel, std::tuple<Params...>(std::forward<Args>(args)...)};
  sim::launch_kernel(reinterpret_cast<const void*>(kernel), grid, block, smem_bytes, stream.stream,
                     &detail::run_closure<Closure>, &closure, &detail::copy_closure<Closure>,
                     &detail::free_closure<Closure>);
#endif
  cuda_check(cudaGetLastError(), "kernel launch", stream.file, stream.line);
}
#endif

}  // namespace nanoserve

/// \brief Checks a CUDA runtime call: throws nanoserve::CudaError with the file and line on failure.
#define CUDA_CHECK(expr) ::nanoserve::cuda_check((expr), #expr, __FILE__, __LINE__)

#if NANOSERVE_REAL_CUDA
/// \brief Declares `T* const name` pointing at the block's dynamic shared memory (the
/// `smem_bytes` of the launch, 16-byte aligned). Use it once per kernel; one raw array backs
/// every kernel, so kernels of different element types do not conflict.
#define NS_DYNAMIC_SHARED(T, name)                                  \
  extern __shared__ __align__(16) unsigned char ns_dynamic_smem_[]; \
  T* const name = reinterpret_cast<T*>(ns_dynamic_smem_)
#else
#define NS_DYNAMIC_SHARED(T, name) \
  T* const name = reinterpret_cast<T*>(::nanoserve::sim::tl_dynamic_smem)
#endif

/// \brief Fully unrolls the next loop (its trip count must be a compile-time constant), which
/// keeps small per-thread arrays (accumulators, loads in flight) in registers instead of local
/// memory. nvcc spells it `#pragma unroll`. The simulator leaves the loop to g++: unrolling
/// changes neither a result (the order of the operations is the same) nor what the race checker
/// sees, and forcing it (`GCC unroll 16`) made the batch-16 GEMV tiers cost minutes of compile
/// time each (kernels/qgemv.cu: 397 s of CPU, 14 s without; kernels/sim/README.md).
#if defined(__CUDACC__)
#define NS_UNROLL _Pragma("unroll")
#else
#define NS_UNROLL
#endif
