// Device-to-device copy: the roofline reference of bench_kernels (apps/bench_kernels/
// bench_copy.cpp), not used by any engine code — memory-bound kernels (GEMV, decode attention)
// are reported as a percentage of the bandwidth this copy reaches.
//
// Versions:
//   v01  grid-stride loop over 16-byte words (one load + one store per thread per step), then the
//        unaligned tail byte by byte. The simplest kernel that reaches near-peak DRAM bandwidth;
//        bench_kernels uses it, beside cudaMemcpy, as the "100%" of memory-bound kernels.
#include <cstdint>
#include <stdexcept>
#include <string>

#include "kernels/copy.h"
#include "kernels/vec_load.cuh"

namespace nanoserve {
namespace {

constexpr int kBlock = 256;
// Enough blocks to fill any current GPU several times over (132 SMs x 8 blocks of 256 threads
// on an H100/H200); the grid-stride loop covers the rest.
constexpr std::size_t kMaxBlocks = 4096;

// dst, src (words) 16-byte words; then dst_tail, src_tail (tail) bytes.
__global__ void copy_kernel_v01(int4* __restrict__ dst, const int4* __restrict__ src,
                                std::size_t words, unsigned char* __restrict__ dst_tail,
                                const unsigned char* __restrict__ src_tail, std::size_t tail) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t first = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (std::size_t i = first; i < words; i += stride) dst[i] = src[i];
  for (std::size_t i = first; i < tail; i += stride) dst_tail[i] = src_tail[i];
}

}  // namespace

void launch_copy(void* dst, const void* src, std::size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return;
  if (dst == nullptr || src == nullptr) {
    throw std::invalid_argument(std::string("launch_copy: ") + (dst == nullptr ? "dst" : "src") +
                                " is null for a copy of " + std::to_string(bytes) + " bytes");
  }
  const bool aligned = aligned16(dst) && aligned16(src);
  const std::size_t words = aligned ? bytes / 16 : 0;
  const std::size_t tail = bytes - words * 16;
  const std::size_t work = words > tail ? words : tail;
  const std::size_t blocks_needed = (work + kBlock - 1) / kBlock;
  const unsigned grid =
      static_cast<unsigned>(blocks_needed < kMaxBlocks ? blocks_needed : kMaxBlocks);
  launch(copy_kernel_v01, dim3(grid), dim3(kBlock), 0, stream, static_cast<int4*>(dst),
         static_cast<const int4*>(src), words, static_cast<unsigned char*>(dst) + words * 16,
         static_cast<const unsigned char*>(src) + words * 16, tail);
}

}  // namespace nanoserve
