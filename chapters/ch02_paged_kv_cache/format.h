#pragma once
/// \file
/// \brief Small helpers the chapter-2 tables share: byte counts in binary units and the
/// process clock the simulator's timings use.

#include <cstdint>
#include <string>

namespace nanoserve::ch02 {

/// \brief "1,280 B"-style binary units: "640 B", "20 KiB", "2.50 MiB", "2.00 GiB".
std::string format_bytes(std::int64_t bytes);

/// \brief Seconds of CPU time this process has used. In the CUDA simulator the kernels are
/// CPU work, so CPU time measures them even when other jobs share the machine (wall time
/// would count those jobs too).
double process_cpu_seconds();

/// \brief Seconds since an arbitrary fixed point (monotonic wall clock).
double wall_seconds();

}  // namespace nanoserve::ch02
