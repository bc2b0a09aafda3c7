#pragma once
/// \file
/// \brief Block barriers and memory fences for the simulator.
///
/// Semantics (those of Volta and later GPUs):
/// - a barrier releases when every *live* thread of the block waits at it; a thread that has
///   returned from the kernel no longer holds anyone up;
/// - all threads must wait at the same barrier: the call site (`__builtin_FILE/LINE` of the
///   call) is recorded, and two threads waiting at different `__syncthreads` are a launch error;
/// - if nothing can run any more (e.g. half a block waits at a barrier, the other half in a warp
///   shuffle), the launch fails with a description of who waits where — never a hang.
///
/// A barrier inside a helper function counts as one site wherever the helper is called from,
/// so divergence between two calls of the same helper is not detected.

#include "kernels/sim/builtins.h"

namespace nanoserve::sim {

/// \brief Which barrier intrinsic is waiting (for error messages).
enum class BarrierKind : unsigned char { kSync, kCount, kAnd, kOr };

/// \brief Outcome of a barrier: how many of the released threads passed a non-zero predicate.
struct BarrierResult {
  int count;         ///< threads with a non-zero predicate
  int participants;  ///< threads released by this barrier (the live threads of the block)
};

/// \brief Waits at the block barrier (implemented by the scheduler).
BarrierResult block_barrier(BarrierKind kind, int predicate, Site site);

}  // namespace nanoserve::sim

/// \brief Waits until every live thread of the block reaches this barrier.
inline void __syncthreads(const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  nanoserve::sim::block_barrier(nanoserve::sim::BarrierKind::kSync, 0, {file, line});
}

/// \brief `__syncthreads` that returns how many threads passed a non-zero predicate.
inline int __syncthreads_count(int predicate, const char* file = __builtin_FILE(),
                               int line = __builtin_LINE()) {
  return nanoserve::sim::block_barrier(nanoserve::sim::BarrierKind::kCount, predicate, {file, line})
      .count;
}

/// \brief `__syncthreads` that returns non-zero iff every thread passed a non-zero predicate.
inline int __syncthreads_and(int predicate, const char* file = __builtin_FILE(),
                             int line = __builtin_LINE()) {
  const nanoserve::sim::BarrierResult r =
      nanoserve::sim::block_barrier(nanoserve::sim::BarrierKind::kAnd, predicate, {file, line});
  return r.count == r.participants ? 1 : 0;
}

/// \brief `__syncthreads` that returns non-zero iff any thread passed a non-zero predicate.
inline int __syncthreads_or(int predicate, const char* file = __builtin_FILE(),
                            int line = __builtin_LINE()) {
  return nanoserve::sim::block_barrier(nanoserve::sim::BarrierKind::kOr, predicate, {file, line})
                     .count > 0
             ? 1
             : 0;
}

/// \brief Orders this thread's memory accesses for the whole device (a full fence on the CPU).
inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
/// \brief Orders this thread's memory accesses for its block.
inline void __threadfence_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
/// \brief Orders this thread's memory accesses for the device and the host.
inline void __threadfence_system() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
