#pragma once
/// \file
/// \brief Peak resident memory of one piece of work, measured in a forked child process (Linux):
/// how the loaders' host-memory claims are checked (tests/ch01/test_device_model_memory.cpp,
/// apps/bench_load).
///
/// The child starts from a copy of the caller, resets the kernel's high-water mark
/// (`/proc/self/clear_refs` ← "5"), runs the work, and reports `VmHWM − VmRSS at the start`; a
/// fresh child per measurement keeps one run's freed-but-resident memory (malloc's arenas, the
/// simulator's device allocations) out of the next. In the simulator the "device" is host
/// memory too, so callers subtract the device bytes the work reports.

#include <array>
#include <cstdint>
#include <functional>
#include <string>

namespace nanoserve {

/// \brief What `measure_peak_memory` saw.
struct PeakMemory {
  bool ok = false;               ///< false: fork, the pipe or /proc/self/clear_refs failed
  std::int64_t peak_bytes = -1;  ///< VmHWM − VmRSS at the start of the work
  std::array<std::int64_t, 4> reported{};  ///< what the work returned (e.g. device bytes)
  std::string error;             ///< the work's exception message, if it threw
};

/// \brief Up to four numbers the measured work reports back from the child.
using PeakMemoryWork = std::function<std::array<std::int64_t, 4>()>;

/// \brief Runs `work` in a child process and returns its peak resident memory above the
/// child's start, and `work`'s return values. The child's exceptions are caught and reported in
/// `error` (with `ok` true: the measurement itself worked).
PeakMemory measure_peak_memory(const PeakMemoryWork& work);

}  // namespace nanoserve
