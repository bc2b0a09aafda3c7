// Simulator only: the cudart subset — poisoned allocations, copy directions and bounds, frees,
// streams and events, the described device — and poisoned dynamic shared memory.
#include "kernels/cuda_compat.h"

#if !NANOSERVE_REAL_CUDA

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "tests/kernels/kernel_test_support.h"

namespace nanoserve {
namespace {

// Expects `code` now, with an explanation containing `fragment`, and nothing pending after.
void expect_error(cudaError_t got, cudaError_t code, const std::string& fragment) {
  EXPECT_EQ(got, code) << cudaGetErrorName(got);
  EXPECT_EQ(sim::last_error_detail_code(), code);
  EXPECT_NE(sim::last_error_detail().find(fragment), std::string::npos) << sim::last_error_detail();
  EXPECT_EQ(cudaGetLastError(), code);         // recorded as the last error...
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);  // ...and cleared by reading it
}

TEST(SimRuntime, NewDeviceMemoryReadsAsNaN) {
  float* d = nullptr;
  CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d), 16 * sizeof(float)));
  std::vector<float> host(16, 0.0f);
  CUDA_CHECK(cudaMemcpy(host.data(), d, 16 * sizeof(float), cudaMemcpyDeviceToHost));
  for (float v : host) {
    std::uint32_t bits;
    std::memcpy(&bits, &v, 4);
    EXPECT_EQ(bits, 0xffffffffu);
    EXPECT_TRUE(std::isnan(v));
  }
  CUDA_CHECK(cudaFree(d));
}

TEST(SimRuntime, CopiesRoundTripInEveryDirection) {
  const std::vector<int> src = {1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<int> dst(8, 0), host_copy(8, 0);
  int* a = nullptr;
  int* b = nullptr;
  CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&a), 32));
  CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&b), 32));
  CUDA_CHECK(cudaMemcpy(a, src.data(), 32, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(b, a, 32, cudaMemcpyDeviceToDevice));
  CUDA_CHECK(cudaMemcpyAsync(dst.data(), b, 32, cudaMemcpyDeviceToHost, nullptr));
  EXPECT_EQ(dst, src);
  CUDA_CHECK(cudaMemcpy(host_copy.data(), dst.data(), 32, cudaMemcpyHostToHost));
  EXPECT_EQ(host_copy, src);
  CUDA_CHECK(cudaMemset(b, 0, 32));
  CUDA_CHECK(cudaMemcpy(dst.data(), b, 32, cudaMemcpyDefault));  // direction inferred
  EXPECT_EQ(dst, std::vector<int>(8, 0));
  CUDA_CHECK(cudaFree(a));
  CUDA_CHECK(cudaFree(b));
}

TEST(SimRuntime, CopiesAndMemsetsOutsideAnAllocationAreInvalidValue) {
  std::vector<char> host(64);
  char* d = nullptr;
  CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d), 32));
  expect_error(cudaMemcpy(d, host.data(), 33, cudaMemcpyHostToDevice), cudaErrorInvalidValue,
               "33 bytes at offset 0 of a 32-byte destination allocation run past its end");
  expect_error(cudaMemcpy(host.data(), d + 16, 17, cudaMemcpyDeviceToHost), cudaErrorInvalidValue,
               "offset 16");
  expect_error(cudaMemset(d + 1, 0, 32), cudaErrorInvalidValue, "run past its end");
  expect_error(cudaMemcpy(host.data(), host.data() + 32, 8, cudaMemcpyDeviceToHost),
               cudaErrorInvalidValue, "not inside any live cudaMalloc allocation");
  EXPECT_EQ(cudaMemcpy(d, host.data(), 32, cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(d, host.data(), 0, cudaMemcpyHostToDevice), cudaSuccess);
  CUDA_CHECK(cudaFree(d));
}

TEST(SimRuntime, SwappedCopyArgumentsAreCaught) {
  std::vector<char> host(32);
  char* d = nullptr;
  CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d), 32));
  // (src, dst) order by mistake: the "host" destination is device memory.
  expect_error(cudaMemcpy(d, host.data(), 32, cudaMemcpyDeviceToHost), cudaErrorInvalidValue,
               "not inside any live cudaMalloc allocation");
  char* e = nullptr;
  CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&e), 32));
  expect_error(cudaMemcpy(d, e, 32, cudaMemcpyHostToDevice), cudaErrorInvalidValue,
               "is device memory but the kind is cudaMemcpyHostToDevice");
  expect_error(cudaMemcpy(d, e, 8, static_cast<cudaMemcpyKind>(17)),
               cudaErrorInvalidMemcpyDirection, "17 is not a cudaMemcpyKind");
  CUDA_CHECK(cudaFree(d));
  CUDA_CHECK(cudaFree(e));
}

TEST(SimRuntime, FreeingTwiceOrFreeingHostMemoryIsInvalidValue) {
  void* d = nullptr;
  CUDA_CHECK(cudaMalloc(&d, 8));
  CUDA_CHECK(cudaFree(d));
  expect_error(cudaFree(d), cudaErrorInvalidValue, "freed twice");
  int on_stack = 0;
  expect_error(cudaFree(&on_stack), cudaErrorInvalidValue, "not the start of a live cudaMalloc");
  EXPECT_EQ(cudaFree(nullptr), cudaSuccess);
  void* pinned = nullptr;
  CUDA_CHECK(cudaMallocHost(&pinned, 64));
  expect_error(cudaFree(pinned), cudaErrorInvalidValue, "cudaMalloc");
  CUDA_CHECK(cudaFreeHost(pinned));
}

TEST(SimRuntime, AnImpossibleAllocationFailsCleanly) {
  void* d = nullptr;
  expect_error(cudaMalloc(&d, std::size_t{1} << 62), cudaErrorMemoryAllocation,
               "exceed the machine's physical memory");
  EXPECT_EQ(d, nullptr);
}

TEST(SimRuntime, EventsTimeTheHostClock) {
  cudaEvent_t start = nullptr, stop = nullptr;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  float ms = -1.0f;
  expect_error(cudaEventElapsedTime(&ms, start, stop), cudaErrorInvalidResourceHandle, "recorded");
  CUDA_CHECK(cudaEventRecord(start, nullptr));
  CUDA_CHECK(cudaEventRecord(stop, nullptr));
  CUDA_CHECK(cudaEventSynchronize(stop));
  CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  EXPECT_GE(ms, 0.0f);
  EXPECT_LT(ms, 1000.0f);
  CUDA_CHECK(cudaEventDestroy(start));
  CUDA_CHECK(cudaEventDestroy(stop));
  expect_error(cudaEventDestroy(stop), cudaErrorInvalidResourceHandle, "destroyed twice");
}

TEST(SimRuntime, DescribesOneSimulatedDevice) {
  int count = 0;
  CUDA_CHECK(cudaGetDeviceCount(&count));
  EXPECT_EQ(count, 1);
  cudaDeviceProp prop;
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  EXPECT_STREQ(prop.name, "nanoserve CUDA simulator (CPU)");
  EXPECT_EQ(prop.warpSize, 32);
  EXPECT_EQ(prop.maxThreadsPerBlock, 1024);
  EXPECT_EQ(prop.sharedMemPerBlock, 48u * 1024);
  int smem = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
  EXPECT_EQ(smem, 227 * 1024);
  CUDA_CHECK(cudaSetDevice(0));
  expect_error(cudaSetDevice(1), cudaErrorInvalidDevice, "device 1 does not exist");
  EXPECT_STREQ(cudaGetErrorString(cudaErrorInvalidValue), "invalid argument");
  EXPECT_STREQ(cudaGetErrorName(cudaErrorLaunchFailure), "cudaErrorLaunchFailure");
}

// out: (blockDim.x,) the raw bits of dynamic shared memory before anything is written.
__global__ void read_fresh_smem_kernel(unsigned* out) {
  NS_DYNAMIC_SHARED(unsigned, fresh);
  out[threadIdx.x] = fresh[threadIdx.x];
  __syncthreads();
  fresh[threadIdx.x] = 7;  // the next block must not see this
}

TEST(SimRuntime, DynamicSharedMemoryStartsPoisonedInEveryBlock) {
  testing::DeviceBuffer<unsigned> out(32);
  launch(read_fresh_smem_kernel, dim3(3), dim3(32), 32 * sizeof(unsigned), nullptr, out.get());
  for (unsigned v : out.to_host()) EXPECT_EQ(v, 0xffffffffu);
}

}  // namespace
}  // namespace nanoserve

#endif  // !NANOSERVE_REAL_CUDA
