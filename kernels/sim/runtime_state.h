#pragma once
/// \file
/// \brief Internal to the simulator: the simulated device's limits and the runtime state shared
/// by the launcher and cudart_sim.cpp (last error, per-kernel attributes, live streams).

#include <cstddef>
#include <string>

#include "kernels/sim/builtins.h"

namespace nanoserve::sim {

/// \brief Limits of the simulated device: those of an sm_80+ GPU, with H100/H200's shared memory
/// opt-in, so that a launch the simulator accepts is one a real GPU of the project accepts.
struct DeviceLimits {
  static constexpr unsigned kMaxThreadsPerBlock = 1024;                    ///< x·y·z of a block
  static constexpr unsigned kMaxBlockDim[3] = {1024, 1024, 64};            ///< per block dimension
  static constexpr unsigned kMaxGridDim[3] = {2147483647u, 65535, 65535};  ///< per grid dimension
  static constexpr std::size_t kSharedPerBlock = 48 * 1024;        ///< default dynamic smem limit
  static constexpr std::size_t kSharedPerBlockOptin = 227 * 1024;  ///< cudaFuncSetAttribute max
  static constexpr int kComputeMajor = 8;  ///< reported compute capability (major)
  static constexpr int kComputeMinor = 0;  ///< reported compute capability (minor)
};

/// \brief Records `code` (with its explanation) as this host thread's last error; returns `code`.
cudaError_t record_error(cudaError_t code, std::string detail);
/// \brief Returns and clears this host thread's last error (cudaGetLastError).
cudaError_t take_last_error();
/// \brief Returns this host thread's last error without clearing it (cudaPeekAtLastError).
cudaError_t peek_last_error();

/// \brief Dynamic shared memory a launch of `kernel` may request (48 KiB unless raised).
std::size_t max_dynamic_smem(const void* kernel);
/// \brief Whether `cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, …)`
/// has been called for `kernel`.
bool has_max_dynamic_smem(const void* kernel);
/// \brief cudaFuncAttributeMaxDynamicSharedMemorySize for `kernel`.
void set_max_dynamic_smem(const void* kernel, std::size_t bytes);

/// \brief Registers a stream created by cudaStreamCreate.
void add_stream(cudaStream_t stream);
/// \brief Unregisters a stream; false if it was not live.
bool remove_stream(cudaStream_t stream);
/// \brief True for the default streams and for live created streams.
bool is_valid_stream(cudaStream_t stream);

}  // namespace nanoserve::sim
