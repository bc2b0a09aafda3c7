#pragma once
/// \file
/// \brief A plain device-to-device byte copy kernel: the bandwidth yardstick of `bench_kernels`
/// (a memory-bound kernel is judged against what a copy achieves on the same device). No engine
/// code uses it; it exists as the benchmark's roofline reference (the 100% of its `%copy`
/// column, beside cudaMemcpy) and is tested so that that reference is a correct copy.

#include <cstddef>

#include "kernels/cuda_compat.h"

namespace nanoserve {

/// \brief Copies `bytes` bytes from `src` to `dst` (device buffers that must not overlap).
///
/// 16-byte loads and stores in a grid-stride loop when both pointers are 16-byte aligned (the
/// tail bytes one by one), byte copies otherwise. 0 bytes launches nothing; null pointers with
/// `bytes > 0` throw std::invalid_argument.
/// \param dst    (bytes) device destination
/// \param src    (bytes) device source
/// \param bytes  number of bytes
/// \param stream CUDA stream
void launch_copy(void* dst, const void* src, std::size_t bytes, cudaStream_t stream);

}  // namespace nanoserve
