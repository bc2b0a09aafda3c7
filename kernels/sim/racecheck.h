#pragma once
/// \file
/// \brief Internal to the simulator: the shared-memory race checker (like compute-sanitizer's
/// racecheck), active in binaries whose kernel code was compiled with `-fsanitize=thread`.
///
/// GCC's ThreadSanitizer instrumentation calls `__tsan_read4(addr)` and friends before every
/// load and store; kernels/sim/racecheck_tsan.cpp defines those entry points (libtsan is not
/// linked) and forwards each access to race_access(). Accesses outside a running block, or
/// outside the block's shared memory — the dynamic shared memory buffer and the OS thread's
/// static TLS block, where `__shared__` (a `static thread_local`) lives — return at once. For
/// every shared byte the checker keeps the last writer and the last two readers (thread, source
/// location, barrier epoch, warp-sync generation); an access by another thread of the block
/// that conflicts (write/write, read/write) without a `__syncthreads` — or, for two lanes of one
/// warp, a warp-synchronizing operation of both — in between is a race. The first race of a
/// block fails the launch at the end of the block, naming the kernel, the address, both threads
/// and both source lines. The scheduler reports barriers and warp operations; async copies
/// report their issue and completion, so reading an async-copy destination before the wait is
/// reported too.

#include <cstddef>
#include <string>

#include "kernels/sim/builtins.h"

namespace nanoserve::sim {

/// \brief True once instrumented code has registered itself (its `__tsan_init` ran).
bool racecheck_enabled();
/// \brief Turns the checker on for this process (called by `__tsan_init`).
void racecheck_enable();

/// \brief A block of `kernel` with `num_threads` threads and the given dynamic shared memory
/// starts on this OS thread.
void race_block_begin(const void* kernel, unsigned num_threads, unsigned char* smem,
                      std::size_t smem_bytes);
/// \brief The block's barrier was released: every earlier access is ordered before later ones.
void race_barrier();
/// \brief Lanes `mask` of warp `warp` completed a warp operation together.
void race_warp_sync(unsigned warp, unsigned mask);
/// \brief The block ended: the description of its first race, or empty.
std::string race_block_end();

/// \brief An instrumented access by the running simulated thread (`pc`: its return address).
void race_access(const void* addr, std::size_t size, bool write, const void* pc);
/// \brief The running thread issued an async copy into `dst` (pending until completed).
void race_async_issue(const void* dst, std::size_t size, Site site);
/// \brief The running thread's async copy into `dst` completed at `site` (a write by it).
void race_async_complete(const void* dst, std::size_t size, Site site);

}  // namespace nanoserve::sim
