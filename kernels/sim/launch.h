#pragma once
/// \file
/// \brief The simulator's launch entry point and run-time options.
///
/// Kernel code never calls these directly: `launch(...)` in kernels/cuda_compat.h does. Tests
/// use `Options` to run a kernel in a given block order, and `last_error_detail()` to read why a
/// launch or runtime call failed.

#include <cstddef>
#include <cstdint>
#include <string>

#include "kernels/sim/builtins.h"

namespace nanoserve::sim {

/// \brief Order in which blocks of a grid, and threads of a block, are started.
///
/// The schedule can hide a race: a kernel missing a `__syncthreads` may be right in one order and
/// wrong in another. Kernel tests therefore run in forward and reverse order.
enum class Order {
  kForward,  ///< linear index order (deterministic, the default)
  kReverse,  ///< last block (and thread) first
  kShuffle,  ///< a seeded pseudo-random permutation, reproducible from `Options::seed`
};

/// \brief How the simulator runs launches.
///
/// Defaults come from the environment, read at first use:
/// - `NANOSERVE_SIM_ORDER` = `forward` | `reverse` | `shuffle` | `shuffle:<seed>`;
/// - `NANOSERVE_SIM_THREADS` = number of OS threads that run blocks (default 1, deterministic);
///   ignored under ASan, where `__shared__` is a plain static and blocks must run one at a time.
///
/// A malformed variable makes every launch fail with a message naming it.
struct Options {
  Order order = Order::kForward;  ///< block and thread start order
  std::uint64_t seed = 0;         ///< permutation seed for Order::kShuffle
  int os_threads = 1;             ///< OS threads running blocks concurrently (>= 1)
  std::string env_error;          ///< non-empty when the environment could not be parsed
};

/// \brief Options from the values of `NANOSERVE_SIM_ORDER` and `NANOSERVE_SIM_THREADS` (either
/// may be null or empty for the default); a malformed value is described in `env_error`.
Options parse_options(const char* order, const char* threads);
/// \brief The options the next launch uses.
Options options();
/// \brief Replaces the options for subsequent launches (all host threads).
void set_options(const Options& options);

/// \brief Sets options for the lifetime of a scope, restoring the previous ones afterwards.
class ScopedOptions {
 public:
  /// \brief Installs `options` until destruction.
  explicit ScopedOptions(const Options& options) : saved_(sim::options()) { set_options(options); }
  /// \brief Restores the options that were active at construction.
  ~ScopedOptions() { set_options(saved_); }
  ScopedOptions(const ScopedOptions&) = delete;
  ScopedOptions& operator=(const ScopedOptions&) = delete;

 private:
  Options saved_;
};

/// \brief Runs the kernel once for the current simulated thread (type-erased closure call).
using KernelBody = void (*)(const void* closure);
/// \brief Copies a launch's closure onto the heap (how stream capture keeps the arguments).
using ClosureCopy = void* (*)(const void* closure);
/// \brief Destroys a closure made by a ClosureCopy.
using ClosureFree = void (*)(void* closure);

/// \brief Validates and runs a launch to completion on the CPU.
///
/// \param kernel the kernel's address (identifies it for `cudaFuncSetAttribute`)
/// \param grid,block launch dimensions (validated like CUDA does)
/// \param smem_bytes dynamic shared memory per block
/// \param stream must be a default stream or a live created one
/// \param body,closure run the kernel with its arguments
/// \param copy,release copy and free the closure; while `stream` captures a graph the launch is
///        recorded with a copy of its arguments instead of running (null: capture fails)
/// \return cudaSuccess, or the error that `cudaGetLastError` will also return; the reason is in
///         `last_error_detail()`. After an error every simulated thread has been unwound and the
///         runtime is ready for the next launch.
cudaError_t launch_kernel(const void* kernel, dim3 grid, dim3 block, std::size_t smem_bytes,
                          cudaStream_t stream, KernelBody body, const void* closure,
                          ClosureCopy copy = nullptr, ClosureFree release = nullptr);

/// \brief Why the most recent failing simulator call on this host thread failed
/// (e.g. "block (3,0,0): threads wait at different __syncthreads: …"); empty if none failed.
const std::string& last_error_detail();

/// \brief The error code `last_error_detail()` belongs to (cudaSuccess if none).
cudaError_t last_error_detail_code();

}  // namespace nanoserve::sim
