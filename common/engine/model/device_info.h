#pragma once
/// \file
/// \brief Which device the kernels run on, in words a report can print: a real GPU (cuda
/// preset) or the CPU simulator of CUDA (sim preset) — never to be confused, because the
/// simulator's timings are CPU timings (docs/design.md, "Measured, simulated, modeled").

#include <string>

namespace nanoserve::engine {

/// \brief "cuda" when the kernels were compiled by nvcc for a GPU, "sim" for the simulator.
const char* kernel_backend();

/// \brief True when a CUDA device can run kernels (always in the simulator; on a cuda build,
/// false on a machine without a GPU or driver).
bool device_available();

/// \brief The device the kernels run on: the GPU's name from `cudaGetDeviceProperties`
/// (e.g. "NVIDIA H200"), or "CPU simulator (<simulator name>)" in the sim build. Throws
/// `Error` with the CUDA error when no device is usable.
std::string device_name();

}  // namespace nanoserve::engine
