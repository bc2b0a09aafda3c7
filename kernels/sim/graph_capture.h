#pragma once
/// \file
/// \brief Internal to the simulator: stream capture (the recording half of CUDA graphs).
///
/// While a stream captures, kernel launches, cudaMemcpyAsync and cudaMemsetAsync on it are
/// recorded as graph nodes instead of running; a kernel's arguments are copied into the node at
/// capture time (by value, as CUDA does). Calls that CUDA forbids during a capture fail here with
/// the same error codes and invalidate the capture, so cudaStreamEndCapture then fails too.

#include <cstddef>
#include <memory>

#include "kernels/sim/launch.h"

namespace nanoserve::sim {

/// \brief What a captured or replayed operation is.
enum class NodeKind { kKernel, kMemcpy, kMemset };

/// \brief One recorded operation of a graph.
struct GraphNode {
  NodeKind kind = NodeKind::kKernel;  ///< which of the fields below apply
  // kKernel
  const void* kernel = nullptr;   ///< kernel address (for attributes and updates)
  dim3 grid;                      ///< grid dimensions
  dim3 block;                     ///< block dimensions
  std::size_t smem_bytes = 0;     ///< dynamic shared memory
  KernelBody body = nullptr;      ///< runs the kernel with the closure's arguments
  std::shared_ptr<void> closure;  ///< owned copy of the launch's kernel pointer and arguments
  // kMemcpy / kMemset
  void* dst = nullptr;                           ///< destination
  const void* src = nullptr;                     ///< memcpy source
  std::size_t count = 0;                         ///< bytes
  cudaMemcpyKind copy_kind = cudaMemcpyDefault;  ///< memcpy direction
  int value = 0;                                 ///< memset byte value
};

/// \brief True while any stream captures (a lock-free check for the common case).
bool any_capture_active();

/// \brief True while `stream` is capturing (active or invalidated).
bool stream_is_capturing(cudaStream_t stream);

/// \brief Called by every operation enqueued on `stream` before it runs. Returns cudaSuccess
/// when the operation should run now; otherwise the operation must not run, and `*recorded`
/// says whether `node` was appended to the capture (success) or an error was recorded.
/// An operation on the legacy default stream while a global-mode capture is active is
/// cudaErrorStreamCaptureImplicit (it would synchronize with the capturing stream).
cudaError_t capture_or_run(const char* api, cudaStream_t stream, GraphNode node, bool* recorded);

/// \brief Fails a call that CUDA prohibits while a global-mode capture is active on any stream
/// (cudaMalloc, synchronous copies, cudaDeviceSynchronize, …): cudaErrorStreamCaptureUnsupported
/// (or `code`), invalidating those captures. cudaSuccess when nothing captures.
cudaError_t check_unsafe_during_capture(const char* api,
                                        cudaError_t code = cudaErrorStreamCaptureUnsupported);

/// \brief Fails a synchronization of `stream` while it captures (cudaErrorStreamCaptureUnsupported,
/// invalidating the capture); cudaSuccess otherwise.
cudaError_t check_sync_during_capture(const char* api, cudaStream_t stream);

/// \brief Forgets the capture of a stream being destroyed (its graph is lost).
void drop_capture(cudaStream_t stream);

}  // namespace nanoserve::sim
