// Simulator only: the shared-memory race checker. These tests run in test_kernels_racecheck,
// whose kernel code is compiled with -fsanitize=thread (kernels/sim/racecheck.h); in the plain
// test binary the checker is off and they skip. A planted race, a missing __syncwarp and a read
// of an async-copy destination before its wait are launch errors naming the kernel, both
// threads and both source lines; the same kernels with the synchronization in place pass.
#include "kernels/cuda_compat.h"

#if !NANOSERVE_REAL_CUDA

#include <functional>
#include <string>
#include <vector>

#include "kernels/sim/racecheck.h"
#include "tests/kernels/kernel_test_support.h"

namespace nanoserve {
namespace {

class RaceCheck : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!sim::racecheck_enabled()) GTEST_SKIP() << "runs in test_kernels_racecheck only";
  }
};

constexpr int kWriteLine = __LINE__ + 4;  // the line of `s[0] = 42.0f` below
// Thread 0 writes s[0]; thread 1 reads it, with or without a barrier in between.
__global__ void neighbour_read(float* out, int with_barrier) {
  __shared__ float s[2];
  if (threadIdx.x == 0) s[0] = 42.0f;  // kWriteLine
  if (with_barrier) __syncthreads();
  if (threadIdx.x == 1) out[0] = s[0];  // kWriteLine + 2
}

constexpr int kRotateLine = __LINE__ + 5;  // the line of `s[lane] = …` below
// Each lane writes its slot and reads the next lane's, with or without a __syncwarp between.
__global__ void warp_rotate(float* out, int with_syncwarp) {
  __shared__ float s[32];
  const unsigned lane = threadIdx.x;
  s[lane] = static_cast<float>(lane);  // kRotateLine
  if (with_syncwarp) __syncwarp();
  out[lane] = s[(lane + 1) % 32];
}

// Every thread reads s[0], then thread 0 overwrites it (write after read, no barrier).
__global__ void overwrite_after_reads(float* out) {
  NS_DYNAMIC_SHARED(float, s);
  if (threadIdx.x == 0) s[0] = 1.0f;
  __syncthreads();
  out[threadIdx.x] = s[0];
  if (threadIdx.x == 0) s[0] = 2.0f;
}

constexpr int kAsyncLine = __LINE__ + 4;  // the line of the copy below
// Thread 0 copies in[0..3] into shared memory; with `wait` it waits before reading.
__global__ void async_then_read(const float* in, float* out, int wait) {
  __shared__ __align__(16) float s[4];
  __pipeline_memcpy_async(&s[0], in, 16);  // kAsyncLine
  __pipeline_commit();
  if (wait) __pipeline_wait_prior(0);
  out[0] = s[1];
  __pipeline_wait_prior(0);
}

std::string at(int line) { return "test_racecheck.cpp:" + std::to_string(line); }

void expect_race(const std::function<void()>& run, const std::vector<std::string>& fragments) {
  try {
    run();
    ADD_FAILURE() << "expected a race report";
  } catch (const CudaError& e) {
    EXPECT_EQ(e.code(), cudaErrorLaunchFailure);
    for (const std::string& f : fragments) {
      EXPECT_NE(std::string(e.what()).find(f), std::string::npos)
          << "'" << f << "' missing: " << e.what();
    }
  }
}

TEST_F(RaceCheck, AWriteReadByAnotherThreadWithoutABarrierIsALaunchError) {
  DeviceBuffer<float> out(2);
  expect_race([&] { launch(neighbour_read, dim3(1), dim3(2), 0, nullptr, out.get(), 0); },
              {"shared-memory race in", "neighbour_read", "thread (0,0,0) writes at",
               "thread (1,0,0) reads at", at(kWriteLine), at(kWriteLine + 2), "__syncthreads"});
  launch(neighbour_read, dim3(1), dim3(2), 0, nullptr, out.get(), 1);
  EXPECT_EQ(out.to_host()[0], 42.0f);
}

TEST_F(RaceCheck, AMissingSyncwarpBetweenLanesIsALaunchError) {
  DeviceBuffer<float> out(32);
  expect_race([&] { launch(warp_rotate, dim3(1), dim3(32), 0, nullptr, out.get(), 0); },
              {"warp_rotate", "__syncwarp", at(kRotateLine), at(kRotateLine + 2)});
  launch(warp_rotate, dim3(1), dim3(32), 0, nullptr, out.get(), 1);
  const std::vector<float> got = out.to_host();
  for (int lane = 0; lane < 32; ++lane) EXPECT_EQ(got[lane], static_cast<float>((lane + 1) % 32));
}

TEST_F(RaceCheck, AWriteAfterOtherThreadsReadIsALaunchErrorInDynamicSharedMemory) {
  DeviceBuffer<float> out(64);
  expect_race([&] { launch(overwrite_after_reads, dim3(1), dim3(64), 4, nullptr, out.get()); },
              {"dynamic shared memory offset 0", "reads at", "thread (0,0,0) writes at"});
}

TEST_F(RaceCheck, ReadingAnAsyncCopyDestinationBeforeTheWaitIsALaunchError) {
  DeviceBuffer<float> in(std::vector<float>{1, 2, 3, 4}), out(1);
  expect_race(
      [&] {
        launch(async_then_read, dim3(1), dim3(1), 0, nullptr, static_cast<const float*>(in.get()),
               out.get(), 0);
      },
      {"async copy", "before __pipeline_wait_prior", at(kAsyncLine), at(kAsyncLine + 3)});
  launch(async_then_read, dim3(1), dim3(1), 0, nullptr, static_cast<const float*>(in.get()),
         out.get(), 1);
  EXPECT_EQ(out.to_host()[0], 2.0f);
}

// A __shared__ array of a class type (GCC guards it with a TLS byte that the first thread
// writes and the others read): correctly synchronized, so no race — with and without the
// planted one, which must still be found in the same array.
__global__ void half_tile(float* out, int with_barrier) {
  __shared__ __half h[64];
  h[threadIdx.x] = __float2half(static_cast<float>(threadIdx.x));
  if (with_barrier) __syncthreads();
  out[threadIdx.x] = __half2float(h[63 - threadIdx.x]);
}

TEST_F(RaceCheck, ClassTypedSharedArraysAreCheckedWithoutFalseRacesOnTheirGuard) {
  DeviceBuffer<float> out(64);
  launch(half_tile, dim3(2), dim3(64), 0, nullptr, out.get(), 1);
  const std::vector<float> got = out.to_host();
  for (int t = 0; t < 64; ++t) EXPECT_EQ(got[t], static_cast<float>(63 - t));
  expect_race([&] { launch(half_tile, dim3(1), dim3(64), 0, nullptr, out.get(), 0); },
              {"half_tile", "__syncthreads"});
}

}  // namespace
}  // namespace nanoserve

#endif  // !NANOSERVE_REAL_CUDA
