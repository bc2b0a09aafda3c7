#pragma once
/// \file
/// \brief What the simulator reads from the running executable's ELF symbol table: the size of a
/// kernel's static `__shared__` variables (nvcc's ptxas knows it; g++ leaves it in the symbols)
/// and where GCC's guard bytes of `static thread_local` variables lie (the race checker must not
/// watch them).
///
/// In the simulator `__shared__` is `static thread_local` (kernels/sim/builtins.h), so a kernel
/// `k`'s shared array `tile` is the local static `_ZZ<k's encoding>E4tile`, a TLS object of its
/// own size. Its guard variable (`_ZGVZ…`, GCC emits one for arrays of class types such as
/// `__half`) is a TLS byte that the first simulated thread writes and the others read.
///
/// Limits: only variables declared in the kernel's own body are counted (not those of `__device__`
/// functions it calls, nor of lambdas inside it); a stripped executable has no symbol table, and
/// then nothing is counted (`static_shared_bytes` returns 0) and no guard is known.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace nanoserve::sim {

/// \brief Bytes of the static `__shared__` variables declared in the body of `kernel` (a
/// function of the running executable), or 0 when the executable has no symbol table or the
/// function is not found. Thread-safe; the table is read once.
std::size_t static_shared_bytes(const void* kernel);

/// \brief A byte range of the calling OS thread's static TLS block, as addresses.
struct AddressRange {
  std::uintptr_t begin = 0;  ///< first byte
  std::uintptr_t end = 0;    ///< one past the last byte
};

/// \brief The calling OS thread's guard bytes of function-local `static thread_local` variables
/// (every `_ZGV…` TLS symbol of the executable), located relative to this thread's `threadIdx`.
/// Empty when the executable has no symbol table.
std::vector<AddressRange> tls_guard_ranges();

}  // namespace nanoserve::sim
