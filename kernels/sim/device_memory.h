#pragma once
/// \file
/// \brief Internal to the simulator: the registry of "device" and pinned host allocations.
///
/// Device memory is ordinary host memory, but every allocation is recorded so that the runtime
/// can check what a GPU would: that a copy's device side lies inside one allocation, that a
/// pointer handed to cudaFree came from cudaMalloc, that a host→device copy was not given two
/// device pointers. Allocations are exactly the requested size (ASan puts a redzone right after)
/// and start filled with 0xFF bytes — NaN as float — so that reading memory nobody wrote shows up.
/// Device allocations of 1 MiB and more are pages mapped for them alone (except under ASan), so
/// that cudaFree gives the memory back to the system at once, as a GPU's would be.

#include <cstddef>
#include <cstdint>

namespace nanoserve::sim {

/// \brief Kinds of memory the runtime hands out.
enum class MemoryKind { kDevice, kPinnedHost };

/// \brief Where a pointer falls.
struct MemoryRegion {
  bool found = false;       ///< inside a live allocation of the asked kind
  std::uintptr_t base = 0;  ///< that allocation's start
  std::size_t size = 0;     ///< and its size
};

/// \brief Allocates `bytes` (256-byte aligned, like cudaMalloc), poisoned with 0xFF; null on
/// failure.
void* allocate(MemoryKind kind, std::size_t bytes);
/// \brief Frees an allocation of `kind`; false if `ptr` is not the start of one.
bool release(MemoryKind kind, void* ptr);
/// \brief The live allocation of `kind` that contains `ptr`, if any.
MemoryRegion find_region(MemoryKind kind, const void* ptr);
/// \brief Bytes currently allocated as device memory.
std::size_t device_bytes_in_use();

}  // namespace nanoserve::sim
