#pragma once
/// \file
/// \brief Small helpers the chapter-2 tables share: byte counts (common/format_bytes.h) and the
/// process clock the simulator's timings use.

#include "common/format_bytes.h"

namespace nanoserve::ch02 {

/// \brief Seconds of CPU time this process has used. In the CUDA simulator the kernels are
/// CPU work, so CPU time measures them even when other jobs share the machine (wall time
/// would count those jobs too).
double process_cpu_seconds();

/// \brief Seconds since an arbitrary fixed point (monotonic wall clock).
double wall_seconds();

}  // namespace nanoserve::ch02
