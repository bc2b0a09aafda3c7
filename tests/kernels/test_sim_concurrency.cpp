// Simulator only: with NANOSERVE_SIM_THREADS (Options::os_threads) > 1 the blocks of one launch
// run on several OS threads at once, so an inter-block race on global memory shows up as on a
// GPU — a plain read-modify-write loses updates — while atomics stay exact.
#include "kernels/cuda_compat.h"

#if !NANOSERVE_REAL_CUDA && !defined(NANOSERVE_ASAN)  // ASan runs blocks on one OS thread

#include <thread>
#include <vector>

#include "tests/kernels/kernel_test_support.h"

namespace nanoserve {
namespace {

// Every block checks in at `arrived` and waits (at most `budget_ns`) until all blocks of the
// grid have: they can only all meet if they run at the same time. Then each adds 1 to `plain`
// without an atomic and to `counted` with one, `iterations` times. Between the read and the
// write the OS thread yields (this kernel only runs in the simulator): on a busy machine the
// four threads are time-sliced on fewer cores, and a busy-wait window was seen to close — 20
// runs without a lost update under the race checker at load 5 on 2 cores — where a yield
// hands the core to another block that then reads the same stale value.
__global__ void meet_then_increment(int* arrived, int* met, volatile int* plain, int* counted,
                                    long long budget_ns, int iterations) {
  if (threadIdx.x != 0) return;
  atomicAdd(arrived, 1);
  const long long start = clock64();
  while (atomicAdd(arrived, 0) < static_cast<int>(gridDim.x) && clock64() - start < budget_ns) {
  }
  if (atomicAdd(arrived, 0) == static_cast<int>(gridDim.x)) atomicAdd(met, 1);
  for (int i = 0; i < iterations; ++i) {
    const int seen = *plain;    // a data race between blocks: read, ...
    std::this_thread::yield();  // ... a window in which another block can come in, ...
    *plain = seen + 1;          // ... write back
    atomicAdd(counted, 1);
  }
}

struct Outcome {
  int met;
  int plain;
  int counted;
};

Outcome run(int os_threads, int blocks, long long budget_ns, int iterations) {
  sim::Options options;
  options.os_threads = os_threads;
  sim::ScopedOptions scoped(options);
  DeviceBuffer<int> arrived(std::vector<int>{0}), met(std::vector<int>{0}),
      plain(std::vector<int>{0}), counted(std::vector<int>{0});
  launch(meet_then_increment, dim3(blocks), dim3(32), 0, nullptr, arrived.get(), met.get(),
         static_cast<volatile int*>(plain.get()), counted.get(), budget_ns, iterations);
  return {met.to_host()[0], plain.to_host()[0], counted.to_host()[0]};
}

TEST(SimConcurrency, BlocksOfOneLaunchRunOnSeveralOsThreadsAtOnce) {
  // Four blocks on four OS threads all meet; on one OS thread the first block gives up waiting.
  EXPECT_EQ(run(4, 4, 10'000'000'000LL, 0).met, 4);
  EXPECT_EQ(run(1, 4, 1'000'000LL, 0).met, 1);  // only the last block sees everyone arrived
}

TEST(SimConcurrency, PlainIncrementsLoseUpdatesAcrossBlocksWhileAtomicsDoNot) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "needs two CPUs";
  constexpr int kBlocks = 4, kIterations = 10'000, kTotal = kBlocks * kIterations;
  // One OS thread: blocks run one after another, nothing is lost.
  const Outcome serial = run(1, kBlocks, 0, kIterations);
  EXPECT_EQ(serial.plain, kTotal);
  EXPECT_EQ(serial.counted, kTotal);
  // Four: the atomic total is exact every time, the plain one falls short at least once.
  bool lost = false;
  for (int attempt = 0; attempt < 20 && !lost; ++attempt) {
    const Outcome concurrent = run(kBlocks, kBlocks, 10'000'000'000LL, kIterations);
    ASSERT_EQ(concurrent.met, kBlocks);
    ASSERT_EQ(concurrent.counted, kTotal);
    EXPECT_LE(concurrent.plain, kTotal);
    lost = concurrent.plain < kTotal;
  }
  EXPECT_TRUE(lost) << "no update was lost in 20 concurrent runs";
}

}  // namespace
}  // namespace nanoserve

#endif
