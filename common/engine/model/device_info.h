#pragma once
/// \file
/// \brief Which device the kernels run on, in words a report can print: a real GPU (cuda
/// preset) or the CPU simulator of CUDA (sim preset) — never to be confused, because the
/// simulator's timings are CPU timings (docs/design.md, "Measured, simulated, modeled").

#include <cstddef>
#include <string>

namespace nanoserve::engine {

/// \brief "cuda" when the kernels were compiled by nvcc for a GPU, "sim" for the simulator.
const char* kernel_backend();

/// \brief The storage type of weights and activations that `--dtype` defaults to on the
/// device path: "bf16" in the cuda build (half the bytes of fp32 to stream each step, and the
/// tensor cores' type; docs/design.md, "Precision"), "fp32" in the sim build (the exact mode:
/// tokens equal the reference implementations', and the tutorials' expected outputs are the
/// simulator's). Tours and reference-story checks pass `--dtype fp32` or keep it by `--tour`.
const char* default_dtype();

/// \brief True when a CUDA device can run kernels (always in the simulator; on a cuda build,
/// false on a machine without a GPU or driver).
bool device_available();

/// \brief The device the kernels run on: the GPU's name from `cudaGetDeviceProperties`
/// (e.g. "NVIDIA H200"), or "CPU simulator (<simulator name>)" in the sim build. Throws
/// `Error` with the CUDA error when no device is usable.
std::string device_name();

/// \brief Bytes of device memory free now (`cudaMemGetInfo`; in the simulator, the machine's
/// physical memory less what the simulated device holds). Throws `Error` when no device is
/// usable.
std::size_t free_device_memory();

/// \brief Throws `InvalidArgument("WHAT needs N of device memory, but only M is free on
/// DEVICE")` unless `bytes` fit in what is free now, so a size from a flag or a file is
/// refused with its name before `cudaMalloc` fails with an internal one. `bytes` < 0 counts
/// as not fitting (an overflowed product).
void check_device_memory(double bytes, const std::string& what);

}  // namespace nanoserve::engine
