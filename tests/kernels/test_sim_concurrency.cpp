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

// Waits (at most `budget_ns`) until every block of the grid has added 1 to `counter`: the
// blocks can only all get past it together if they run at the same time. True when they did.
__device__ bool all_blocks_reach(int* counter, long long budget_ns) {
  atomicAdd(counter, 1);
  const long long start = clock64();
  while (atomicAdd(counter, 0) < static_cast<int>(gridDim.x) && clock64() - start < budget_ns) {
  }
  return atomicAdd(counter, 0) == static_cast<int>(gridDim.x);
}

// Every block meets the others at `arrived` (counted in `met`), then adds 1 to `plain`
// without an atomic and to `counted` with one, `iterations` times. In the first iteration
// every block reads `plain` and waits at `read` until all have read before it writes back: the
// interleaving a GPU's blocks produce by chance, here forced, so that concurrent blocks lose
// updates on every run, whatever the load of the machine (a window left to chance closed on a
// busy 2-core CI machine: 20 runs without a loss). On one OS thread the blocks cannot meet,
// the wait times out, and nothing is lost.
__global__ void meet_then_increment(int* arrived, int* met, int* read, volatile int* plain,
                                    int* counted, long long budget_ns, int iterations) {
  if (threadIdx.x != 0) return;
  if (all_blocks_reach(arrived, budget_ns)) atomicAdd(met, 1);
  for (int i = 0; i < iterations; ++i) {
    const int seen = *plain;  // a data race between blocks: read, ...
    if (i == 0) all_blocks_reach(read, budget_ns);  // ... (every block has read the same value) ...
    *plain = seen + 1;        // ... write back
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
      read(std::vector<int>{0}), plain(std::vector<int>{0}), counted(std::vector<int>{0});
  launch(meet_then_increment, dim3(blocks), dim3(32), 0, nullptr, arrived.get(), met.get(),
         read.get(), static_cast<volatile int*>(plain.get()), counted.get(), budget_ns,
         iterations);
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
  // Four: the atomic total is exact, the plain one loses at least the three updates of the
  // first iteration that were written over.
  const Outcome concurrent = run(kBlocks, kBlocks, 10'000'000'000LL, kIterations);
  ASSERT_EQ(concurrent.met, kBlocks);
  EXPECT_EQ(concurrent.counted, kTotal);
  EXPECT_LE(concurrent.plain, kTotal - (kBlocks - 1));
}

}  // namespace
}  // namespace nanoserve

#endif
