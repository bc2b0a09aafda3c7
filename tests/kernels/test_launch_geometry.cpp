// Launch geometry and shared memory: 3D grids and blocks, the built-in index variables, dynamic
// shared memory (default and opted-in sizes) and static shared memory per block.
#include <vector>

#include "tests/kernels/kernel_test_support.h"

namespace nanoserve {
namespace {

using LaunchGeometry = testing::DeviceTest;

// out: (total threads, 8) = thread x,y,z, block x,y,z, blockDim product, gridDim product
__global__ void geometry_kernel(unsigned* out) {
  const unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  const unsigned thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  unsigned* o = out + 8 * (block * blockDim.x * blockDim.y * blockDim.z + thread);
  o[0] = threadIdx.x;
  o[1] = threadIdx.y;
  o[2] = threadIdx.z;
  o[3] = blockIdx.x;
  o[4] = blockIdx.y;
  o[5] = blockIdx.z;
  o[6] = blockDim.x * blockDim.y * blockDim.z;
  o[7] = gridDim.x * gridDim.y * gridDim.z;
}

TEST_F(LaunchGeometry, ThreeDimensionalGridsVisitEveryThreadOnceWithItsIndices) {
  const dim3 grid(3, 2, 4);
  const dim3 block(5, 3, 2);
  const unsigned threads = 3 * 2 * 4 * 5 * 3 * 2;
  testing::DeviceBuffer<unsigned> out(8 * threads);
  launch(geometry_kernel, grid, block, 0, nullptr, out.get());
  const std::vector<unsigned> got = out.to_host();
  unsigned i = 0;
  for (unsigned bz = 0; bz < 4; ++bz)
    for (unsigned by = 0; by < 2; ++by)
      for (unsigned bx = 0; bx < 3; ++bx)
        for (unsigned tz = 0; tz < 2; ++tz)
          for (unsigned ty = 0; ty < 3; ++ty)
            for (unsigned tx = 0; tx < 5; ++tx, ++i) {
              const unsigned want[8] = {tx, ty, tz, bx, by, bz, 30, 24};
              for (int k = 0; k < 8; ++k) ASSERT_EQ(got[8 * i + k], want[k]) << i << "," << k;
            }
}

// in/out: (gridDim.x * blockDim.x,); each block reverses its slice through dynamic smem.
__global__ void reverse_kernel(const float* in, float* out) {
  NS_DYNAMIC_SHARED(float, buf);
  const unsigned t = threadIdx.x;
  const unsigned base = blockIdx.x * blockDim.x;
  buf[t] = in[base + t];
  __syncthreads();
  out[base + t] = buf[blockDim.x - 1 - t];
}

void check_reverse(unsigned block, unsigned pad_floats) {
  const unsigned blocks = 3;
  std::vector<float> in(blocks * block);
  for (unsigned i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i);
  testing::DeviceBuffer<float> d_in(in);
  testing::DeviceBuffer<float> d_out(in.size());
  launch(reverse_kernel, dim3(blocks), dim3(block), (block + pad_floats) * sizeof(float), nullptr,
         d_in.get(), d_out.get());
  const std::vector<float> got = d_out.to_host();
  for (unsigned b = 0; b < blocks; ++b)
    for (unsigned t = 0; t < block; ++t)
      ASSERT_EQ(got[b * block + t], in[b * block + block - 1 - t]) << b << "," << t;
}

TEST_F(LaunchGeometry, DynamicSharedMemoryIsPrivateToEachBlock) { check_reverse(200, 0); }

TEST_F(LaunchGeometry, DynamicSharedMemoryAbove48KiBWorksAfterOptIn) {
  constexpr unsigned kFloats = 20000;  // 80 000 bytes
  CUDA_CHECK(cudaFuncSetAttribute(reinterpret_cast<const void*>(reverse_kernel),
                                  cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(kFloats * sizeof(float))));
  check_reverse(256, kFloats - 256);
}

// out: (gridDim.x,); static shared memory is per block even when blocks run concurrently.
__global__ void static_smem_kernel(int* out) {
  __shared__ int total;
  if (threadIdx.x == 0) total = 0;
  __syncthreads();
  atomicAdd(&total, static_cast<int>(blockIdx.x));
  __syncthreads();
  if (threadIdx.x == 0) out[blockIdx.x] = total;
}

TEST_F(LaunchGeometry, StaticSharedMemoryIsPrivateToEachBlock) {
  testing::DeviceBuffer<int> out(40);
  launch(static_smem_kernel, dim3(40), dim3(64), 0, nullptr, out.get());
  const std::vector<int> got = out.to_host();
  for (int b = 0; b < 40; ++b) EXPECT_EQ(got[b], 64 * b) << b;
}

}  // namespace
}  // namespace nanoserve
