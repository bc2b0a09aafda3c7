// Simulator only: every fault a GPU would hang or crash on becomes a launch error with a message,
// never a hang or an abort, and the runtime keeps working for the next launch.
#include "kernels/cuda_compat.h"

#if !NANOSERVE_REAL_CUDA

#include <atomic>
#include <stdexcept>
#include <vector>

#include "kernels/sim/block_scheduler.h"
#include "kernels/sim/elf_symbols.h"
#include "tests/kernels/kernel_test_support.h"

namespace nanoserve {
namespace {

using testing::expect_cuda_error;

// out: (blockDim.x,)
__global__ void healthy_kernel(int* out) {
  __syncthreads();
  out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, static_cast<int>(threadIdx.x), 1);
}

// The runtime still works: a kernel with a barrier and a shuffle gives the right answer, and no
// error is pending.
void expect_runtime_usable() {
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  testing::DeviceBuffer<int> out(64);
  launch(healthy_kernel, dim3(2), dim3(64), 0, nullptr, out.get());
  const std::vector<int> got = out.to_host();
  for (int t = 0; t < 64; ++t) ASSERT_EQ(got[t], t ^ 1);
}

__global__ void divergent_barrier_kernel() {
  if (threadIdx.x < 16) {
    __syncthreads();
  } else {
    __syncthreads();
  }
}

TEST(SimErrors, BarriersAtDifferentCallSitesAreALaunchError) {
  expect_cuda_error([] { launch(divergent_barrier_kernel, dim3(1), dim3(32), 0, nullptr); },
                    cudaErrorLaunchFailure, "threads wait at different barriers");
  expect_runtime_usable();
}

// Half the warp waits in a shuffle for the other half, which waits at the block barrier.
__global__ void deadlock_kernel(int* out) {
  if (threadIdx.x < 16) {
    out[threadIdx.x] = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x), 0);
  } else {
    __syncthreads();
  }
}

TEST(SimErrors, DeadlockIsALaunchErrorThatSaysWhoWaitsWhere) {
  testing::DeviceBuffer<int> out(32);
  expect_cuda_error([&] { launch(deadlock_kernel, dim3(1), dim3(32), 0, nullptr, out.get()); },
                    cudaErrorLaunchFailure, "deadlock");
  expect_cuda_error([&] { launch(deadlock_kernel, dim3(1), dim3(32), 0, nullptr, out.get()); },
                    cudaErrorLaunchFailure, "__shfl_sync");
  expect_runtime_usable();
}

TEST(SimErrors, FailedLaunchesReturnEveryFiberToThePool) {
  testing::DeviceBuffer<int> out(64);
  const auto fail_once = [&] {
    EXPECT_THROW(launch(deadlock_kernel, dim3(2), dim3(64), 0, nullptr, out.get()), CudaError);
  };
  fail_once();
  const std::size_t workers = sim::BlockScheduler::for_this_thread().worker_count();
  for (int i = 0; i < 5; ++i) fail_once();
  EXPECT_EQ(sim::BlockScheduler::for_this_thread().worker_count(), workers);
  expect_runtime_usable();
}

__global__ void mask_mismatch_kernel(int* out) {
  const unsigned mask = threadIdx.x == 0 ? 0xffffffffu : 0xfffffffeu;
  out[threadIdx.x] = __any_sync(mask, 1);
}

TEST(SimErrors, LanesPassingDifferentMasksAreALaunchError) {
  // Caught when a lane arrives while lanes with an overlapping mask wait: in forward order lane 0
  // waits with the full mask when lane 1 arrives. (In reverse order lanes 1..31 complete their
  // own rendezvous first and the mismatch goes unnoticed: see warp_ops.h.)
  sim::ScopedOptions forward{sim::Options{}};
  testing::DeviceBuffer<int> out(32);
  expect_cuda_error([&] { launch(mask_mismatch_kernel, dim3(1), dim3(32), 0, nullptr, out.get()); },
                    cudaErrorLaunchFailure, "same mask");
  expect_runtime_usable();
}

__global__ void foreign_mask_kernel(int* out) {
  out[threadIdx.x] = __shfl_sync(0x2u, 1, 1);  // lane 0 is not in 0x2
}

TEST(SimErrors, AMaskWithoutTheCallingLaneIsALaunchError) {
  testing::DeviceBuffer<int> out(32);
  expect_cuda_error([&] { launch(foreign_mask_kernel, dim3(1), dim3(32), 0, nullptr, out.get()); },
                    cudaErrorLaunchFailure, "does not include its own lane");
  expect_runtime_usable();
}

__global__ void bad_width_kernel(int* out) {
  out[threadIdx.x] = __shfl_down_sync(0xffffffffu, 1, 1u, 24);
}

TEST(SimErrors, AShuffleWidthThatIsNotAPowerOfTwoIsALaunchError) {
  testing::DeviceBuffer<int> out(32);
  expect_cuda_error([&] { launch(bad_width_kernel, dim3(1), dim3(32), 0, nullptr, out.get()); },
                    cudaErrorLaunchFailure, "width 24");
  expect_runtime_usable();
}

std::atomic<int> g_constructed{0};
std::atomic<int> g_destroyed{0};
struct Tracker {
  Tracker() { ++g_constructed; }
  ~Tracker() { ++g_destroyed; }
};

// Thread 5 of block 1 throws while the other threads of its block wait at the barrier.
__global__ void throwing_kernel() {
  Tracker tracker;
  if (blockIdx.x == 1 && threadIdx.x == 5) throw std::runtime_error("boom in thread 5");
  __syncthreads();
}

TEST(SimErrors, AnExceptionInAKernelIsALaunchErrorAndUnwindsEveryThread) {
  g_constructed = g_destroyed = 0;
  sim::Options forward;  // thread 5 then runs while threads 0-4 wait at the barrier
  sim::ScopedOptions scoped(forward);
  expect_cuda_error([] { launch(throwing_kernel, dim3(3), dim3(64), 0, nullptr); },
                    cudaErrorLaunchFailure, "boom in thread 5");
  EXPECT_GT(g_constructed.load(), 64);                  // block 0 ran, block 1 had started
  EXPECT_EQ(g_destroyed.load(), g_constructed.load());  // waiting threads were unwound
  expect_runtime_usable();
}

__global__ void nested_launch_kernel(int* out) {
  launch(healthy_kernel, dim3(1), dim3(32), 0, nullptr, out);
}

TEST(SimErrors, LaunchingFromInsideAKernelIsReported) {
  testing::DeviceBuffer<int> out(32);
  try {
    launch(nested_launch_kernel, dim3(1), dim3(1), 0, nullptr, out.get());
    ADD_FAILURE() << "expected an error";
  } catch (const CudaError& e) {
    // The inner launch's error surfaces as an exception thrown in the kernel.
    EXPECT_NE(std::string(e.what()).find("dynamic parallelism"), std::string::npos) << e.what();
  }
  expect_runtime_usable();
}

__global__ void empty_kernel() {}

TEST(SimErrors, BadLaunchDimensionsAreInvalidConfiguration) {
  const dim3 bad_blocks[] = {dim3(1025), dim3(0), dim3(1, 1, 65), dim3(32, 32, 2), dim3(1, 1025)};
  for (const dim3& block : bad_blocks) {
    expect_cuda_error([&] { launch(empty_kernel, dim3(1), block, 0, nullptr); },
                      cudaErrorInvalidConfiguration, "block");
  }
  const dim3 bad_grids[] = {dim3(0), dim3(1, 65536), dim3(1, 1, 65536)};
  for (const dim3& grid : bad_grids) {
    expect_cuda_error([&] { launch(empty_kernel, grid, dim3(32), 0, nullptr); },
                      cudaErrorInvalidConfiguration, "grid");
  }
  EXPECT_NO_THROW(launch(empty_kernel, dim3(1), dim3(1024), 0, nullptr));
  EXPECT_NO_THROW(launch(empty_kernel, dim3(3, 2, 2), dim3(4, 4, 64), 0, nullptr));
  expect_runtime_usable();
}

TEST(SimErrors, TooMuchDynamicSharedMemoryIsInvalidValue) {
  expect_cuda_error([] { launch(empty_kernel, dim3(1), dim3(32), 48 * 1024 + 1, nullptr); },
                    cudaErrorInvalidValue, "dynamic shared memory");
  EXPECT_NO_THROW(launch(empty_kernel, dim3(1), dim3(32), 48 * 1024, nullptr));
  EXPECT_EQ(cudaFuncSetAttribute(reinterpret_cast<const void*>(empty_kernel),
                                 cudaFuncAttributeMaxDynamicSharedMemorySize, 300 * 1024),
            cudaErrorInvalidValue);  // above the 227 KiB opt-in limit
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  expect_runtime_usable();
}

// 40 KiB of static shared memory: legal alone, but it leaves only 8 KiB of the default 48 for
// dynamic shared memory.
__global__ void static_40k_kernel(float* out) {
  __shared__ float tile[10 * 1024];
  __shared__ __half halves[64];
  tile[threadIdx.x] = static_cast<float>(threadIdx.x);
  halves[threadIdx.x] = __float2half(1.0f);
  __syncthreads();
  out[threadIdx.x] = tile[31 - threadIdx.x] + __half2float(halves[threadIdx.x]);
}

// 56 KiB statically: nvcc's ptxas refuses such a kernel ("uses too much shared data").
__global__ void static_56k_kernel(float* out) {
  __shared__ float big[14 * 1024];
  big[threadIdx.x] = 1.0f;
  __syncthreads();
  out[threadIdx.x] = big[threadIdx.x];
}

template <int N>
__global__ void static_template_kernel(int* out) {
  __shared__ int cells[N];
  cells[threadIdx.x] = 1;
  __syncthreads();
  out[threadIdx.x] = cells[threadIdx.x];
}

TEST(SimErrors, StaticSharedMemoryIsCountedFromTheKernelsSymbols) {
  EXPECT_EQ(sim::static_shared_bytes(reinterpret_cast<const void*>(static_40k_kernel)),
            10 * 1024 * sizeof(float) + 64 * sizeof(__half));
  EXPECT_EQ(sim::static_shared_bytes(reinterpret_cast<const void*>(static_template_kernel<96>)),
            96 * sizeof(int));
  EXPECT_EQ(sim::static_shared_bytes(reinterpret_cast<const void*>(static_template_kernel<8>)),
            8 * sizeof(int));
  EXPECT_EQ(sim::static_shared_bytes(reinterpret_cast<const void*>(empty_kernel)), 0u);
}

TEST(SimErrors, StaticAndDynamicSharedMemoryShareTheLimit) {
  testing::DeviceBuffer<float> out(32);
  const std::size_t static_bytes = 10 * 1024 * sizeof(float) + 64 * sizeof(__half);
  const std::size_t room = 48 * 1024 - static_bytes;
  EXPECT_NO_THROW(launch(static_40k_kernel, dim3(1), dim3(32), room, nullptr, out.get()));
  EXPECT_EQ(out.to_host()[0], 32.0f);
  expect_cuda_error(
      [&] { launch(static_40k_kernel, dim3(1), dim3(32), room + 1, nullptr, out.get()); },
      cudaErrorInvalidValue, "static");
  expect_cuda_error([&] { launch(static_56k_kernel, dim3(1), dim3(32), 0, nullptr, out.get()); },
                    cudaErrorInvalidValue, "static __shared__");
  // The opt-in maximum is also shared: 227 KiB less the static bytes.
  const void* k = reinterpret_cast<const void*>(static_40k_kernel);
  EXPECT_EQ(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 static_cast<int>(227 * 1024 - static_bytes + 1)),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(100 * 1024)));
  EXPECT_NO_THROW(launch(static_40k_kernel, dim3(1), dim3(32), 100 * 1024, nullptr, out.get()));
  expect_runtime_usable();
}

TEST(SimErrors, ADestroyedStreamIsAnInvalidHandle) {
  cudaStream_t stream = nullptr;
  CUDA_CHECK(cudaStreamCreate(&stream));
  EXPECT_NO_THROW(launch(empty_kernel, dim3(1), dim3(1), 0, stream));
  CUDA_CHECK(cudaStreamDestroy(stream));
  expect_cuda_error([&] { launch(empty_kernel, dim3(1), dim3(1), 0, stream); },
                    cudaErrorInvalidResourceHandle, "stream");
  expect_runtime_usable();
}

TEST(SimErrors, MalformedEnvironmentOptionsFailEveryLaunchWithTheirName) {
  sim::Options bad;
  bad.env_error = "NANOSERVE_SIM_ORDER='sideways': expected forward, reverse, shuffle";
  {
    sim::ScopedOptions scoped(bad);
    expect_cuda_error([] { launch(empty_kernel, dim3(1), dim3(1), 0, nullptr); },
                      cudaErrorInvalidValue, "NANOSERVE_SIM_ORDER='sideways'");
  }
  expect_runtime_usable();
}

TEST(SimErrors, LaunchErrorsNameTheFileAndLineOfTheLaunch) {
  try {
    launch(empty_kernel, dim3(0), dim3(1), 0, nullptr);
    ADD_FAILURE() << "expected an error";
  } catch (const CudaError& e) {
    EXPECT_NE(std::string(e.what()).find("test_sim_errors.cpp:"), std::string::npos) << e.what();
  }
}

TEST(SimErrors, IntrinsicsOutsideAKernelThrowLogicError) {
  EXPECT_THROW(__syncthreads(), std::logic_error);
  EXPECT_THROW(__ballot_sync(0xffffffffu, 1), std::logic_error);
}

}  // namespace
}  // namespace nanoserve

#endif  // !NANOSERVE_REAL_CUDA
