#pragma once
/// \file
/// \brief Asynchronous global→shared copies for the simulator: the primitives of CUDA's
/// `cuda_pipeline_primitives.h` (`__pipeline_memcpy_async`, `__pipeline_commit`,
/// `__pipeline_wait_prior`), as a double-buffered tile loop uses them.
///
/// Semantics (those of `cp.async` on sm_80+): a copy is issued by one thread and belongs to that
/// thread's pipeline; `__pipeline_commit` closes the thread's pending copies into a batch;
/// `__pipeline_wait_prior(n)` waits until at most `n` of the thread's committed batches are
/// still in flight. Only then is the destination defined, and only for the issuing thread —
/// other threads need a `__syncthreads` after the wait as well.
///
/// How the simulator enforces it: the source bytes are read when the copy is issued, and the
/// destination is filled with 0xFF bytes (NaN as float) until the wait that completes the batch
/// writes them, so a read before the wait sees poison; a write into the destination while the
/// copy is in flight is a launch error at the wait, and under the race checker
/// (kernels/sim/README.md) a read before the wait is one too. Misuse — a size other than 4, 8 or
/// 16, a misaligned pointer, a source outside device memory, a destination in device memory —
/// is a launch error naming the call site.

#include <cstddef>

#include "kernels/sim/builtins.h"

namespace nanoserve::sim {

/// \brief Issues one copy of `size` bytes (`size - zfill` read, the rest zero) for the
/// current simulated thread.
void pipeline_memcpy_async(void* dst, const void* src, std::size_t size, std::size_t zfill,
                           Site site);
/// \brief Commits the current thread's pending copies as one batch.
void pipeline_commit(Site site);
/// \brief Completes the current thread's committed batches but the `prior` most recent.
void pipeline_wait_prior(std::size_t prior, Site site);

}  // namespace nanoserve::sim

/// \brief Asynchronously copies `size_and_align` (4, 8 or 16) bytes from global to shared
/// memory; the last `zfill` bytes of the destination are zero-filled instead of read.
inline void __pipeline_memcpy_async(void* __restrict__ dst_shared,
                                    const void* __restrict__ src_global, size_t size_and_align,
                                    size_t zfill = 0, const char* file = __builtin_FILE(),
                                    int line = __builtin_LINE()) {
  nanoserve::sim::pipeline_memcpy_async(dst_shared, src_global, size_and_align, zfill,
                                        {file, line});
}

/// \brief Commits the calling thread's copies issued since the last commit as one batch.
inline void __pipeline_commit(const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  nanoserve::sim::pipeline_commit({file, line});
}

/// \brief Waits until at most `prior` of the calling thread's committed batches are in flight.
inline void __pipeline_wait_prior(size_t prior, const char* file = __builtin_FILE(),
                                  int line = __builtin_LINE()) {
  nanoserve::sim::pipeline_wait_prior(prior, {file, line});
}
