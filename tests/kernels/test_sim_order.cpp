// Simulator only: block and thread start orders (forward, reverse, seeded shuffle), the
// permutation behind them, several OS threads, and the point of it all — a missing
// __syncthreads that one order hides is exposed by the other.
#include "kernels/cuda_compat.h"

#if !NANOSERVE_REAL_CUDA

#include <algorithm>
#include <numeric>
#include <vector>

#include "kernels/sim/permutation.h"
#include "kernels/sim/racecheck.h"
#include "tests/kernels/kernel_test_support.h"

namespace nanoserve {
namespace {

sim::Options with_order(sim::Order order, std::uint64_t seed = 0) {
  sim::Options options;
  options.order = order;
  options.seed = seed;
  return options;
}

// out: (n,); each thread writes its neighbour's slot of dynamic shared memory — WITHOUT the
// barrier that should separate the write from the read.
__global__ void racy_neighbour_kernel(int* out, int synchronize) {
  NS_DYNAMIC_SHARED(int, slot);
  const unsigned t = threadIdx.x;
  slot[t] = static_cast<int>(t) + 1;
  if (synchronize) __syncthreads();
  out[t] = slot[(t + 1) % blockDim.x];
}

std::vector<int> run_neighbour(sim::Order order, int synchronize) {
  sim::ScopedOptions scoped(with_order(order));
  testing::DeviceBuffer<int> out(256);
  launch(racy_neighbour_kernel, dim3(1), dim3(256), 256 * sizeof(int), nullptr, out.get(),
         synchronize);
  return out.to_host();
}

int count_wrong(const std::vector<int>& got) {
  int wrong = 0;
  for (int t = 0; t < 256; ++t) wrong += got[t] != (t + 1) % 256 + 1;
  return wrong;
}

TEST(SimOrder, AMissingSyncthreadsIsExposedByForwardOrReverseOrder) {
  if (sim::racecheck_enabled()) {  // there the missing barrier is a launch error in any order
    testing::expect_cuda_error([] { run_neighbour(sim::Order::kForward, 0); },
                               cudaErrorLaunchFailure, "shared-memory race in");
    return;
  }
  const std::vector<int> forward = run_neighbour(sim::Order::kForward, 0);
  const std::vector<int> reverse = run_neighbour(sim::Order::kReverse, 0);
  // Forward: thread t finishes before t+1 writes its slot, so 255 of 256 reads see the poison.
  // Reverse: t+1 has written first, so only the wrap-around read of slot 0 is stale.
  EXPECT_EQ(count_wrong(forward), 255);
  EXPECT_EQ(count_wrong(reverse), 1);
  EXPECT_EQ(forward[0], -1);  // 0xFFFFFFFF: unwritten dynamic shared memory
}

TEST(SimOrder, WithTheBarrierBothOrdersAreCorrect) {
  EXPECT_EQ(count_wrong(run_neighbour(sim::Order::kForward, 1)), 0);
  EXPECT_EQ(count_wrong(run_neighbour(sim::Order::kReverse, 1)), 0);
  EXPECT_EQ(count_wrong(run_neighbour(sim::Order::kShuffle, 1)), 0);
}

// tickets: (gridDim.x,) or (blockDim.x,): the order in which blocks / threads got to run.
__global__ void block_ticket_kernel(int* counter, int* tickets) {
  if (threadIdx.x == 0) tickets[blockIdx.x] = atomicAdd(counter, 1);
}
__global__ void thread_ticket_kernel(int* counter, int* tickets) {
  tickets[threadIdx.x] = atomicAdd(counter, 1);  // no barrier: threads run in start order
}

std::vector<int> tickets(sim::Options options, bool blocks, int n = 64) {
  sim::ScopedOptions scoped(options);
  testing::DeviceBuffer<int> counter(std::vector<int>{0});
  testing::DeviceBuffer<int> out(n);
  if (blocks) {
    launch(block_ticket_kernel, dim3(n), dim3(32), 0, nullptr, counter.get(), out.get());
  } else {
    launch(thread_ticket_kernel, dim3(1), dim3(n), 0, nullptr, counter.get(), out.get());
  }
  return out.to_host();
}

std::vector<int> iota(int n, bool reversed) {
  std::vector<int> v(n);
  std::iota(v.begin(), v.end(), 0);
  if (reversed) std::reverse(v.begin(), v.end());
  return v;
}

TEST(SimOrder, BlocksAndThreadsStartInTheRequestedOrder) {
  for (bool blocks : {true, false}) {
    EXPECT_EQ(tickets(with_order(sim::Order::kForward), blocks), iota(64, false));
    EXPECT_EQ(tickets(with_order(sim::Order::kReverse), blocks), iota(64, true));
    const std::vector<int> shuffled = tickets(with_order(sim::Order::kShuffle, 7), blocks);
    std::vector<int> sorted = shuffled;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, iota(64, false));    // every one ran exactly once
    EXPECT_NE(shuffled, iota(64, false));  // in another order
    EXPECT_EQ(tickets(with_order(sim::Order::kShuffle, 7), blocks), shuffled);  // reproducibly
    EXPECT_NE(tickets(with_order(sim::Order::kShuffle, 8), blocks), shuffled);  // per seed
  }
}

TEST(SimOptions, ParsesTheEnvironmentSwitches) {
  EXPECT_EQ(sim::parse_options(nullptr, nullptr).order, sim::Order::kForward);
  EXPECT_EQ(sim::parse_options("", "").os_threads, 1);
  EXPECT_EQ(sim::parse_options("reverse", nullptr).order, sim::Order::kReverse);
  const sim::Options shuffled = sim::parse_options("shuffle:42", "3");
  EXPECT_EQ(shuffled.order, sim::Order::kShuffle);
  EXPECT_EQ(shuffled.seed, 42u);
  EXPECT_EQ(shuffled.os_threads, 3);
  EXPECT_TRUE(shuffled.env_error.empty());
}

TEST(SimOptions, NamesAMalformedSwitch) {
  EXPECT_NE(
      sim::parse_options("sideways", nullptr).env_error.find("NANOSERVE_SIM_ORDER='sideways'"),
      std::string::npos);
  EXPECT_NE(sim::parse_options("shuffle:x", nullptr).env_error.find("shuffle:<seed>"),
            std::string::npos);
  for (const char* threads : {"0", "2x", "-1", "100000"}) {
    EXPECT_NE(sim::parse_options(nullptr, threads).env_error.find("NANOSERVE_SIM_THREADS"),
              std::string::npos)
        << threads;
  }
}

TEST(SimPermutation, ShuffleIsABijectionForAwkwardSizes) {
  for (std::uint64_t n : {1ull, 2ull, 3ull, 17ull, 1000ull, 65537ull}) {
    const sim::Permutation permutation(sim::Order::kShuffle, 42, n);
    std::vector<char> seen(n, 0);
    for (std::uint64_t i = 0; i < n; ++i) {
      const std::uint64_t p = permutation(i);
      ASSERT_LT(p, n);
      ASSERT_EQ(seen[p], 0) << "n=" << n << ": " << p << " produced twice";
      seen[p] = 1;
    }
  }
}

// out: (gridDim.x * blockDim.x,) block sums computed with a barrier and an atomic total.
__global__ void sum_kernel(const int* in, int* block_sums, int* total) {
  __shared__ int partial[128];
  const unsigned t = threadIdx.x;
  partial[t] = in[blockIdx.x * 128 + t];
  __syncthreads();
  if (t == 0) {
    int s = 0;
    for (int i = 0; i < 128; ++i) s += partial[i];
    block_sums[blockIdx.x] = s;
    atomicAdd(total, s);
  }
}

TEST(SimOrder, SeveralOsThreadsGiveTheSameResults) {
  constexpr int kBlocks = 257;
  std::vector<int> in(kBlocks * 128);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<int>(i % 1000);
  testing::DeviceBuffer<int> d_in(in);
  for (int threads : {1, 2, 3}) {
    sim::Options options;
    options.os_threads = threads;
    sim::ScopedOptions scoped(options);
    testing::DeviceBuffer<int> sums(kBlocks);
    testing::DeviceBuffer<int> total(std::vector<int>{0});
    launch(sum_kernel, dim3(kBlocks), dim3(128), 0, nullptr, d_in.get(), sums.get(), total.get());
    const std::vector<int> got = sums.to_host();
    long long all = 0;
    for (int b = 0; b < kBlocks; ++b) {
      int want = 0;
      for (int i = 0; i < 128; ++i) want += in[b * 128 + i];
      ASSERT_EQ(got[b], want) << "threads=" << threads << " block " << b;
      all += want;
    }
    EXPECT_EQ(total.to_host()[0], all) << "threads=" << threads;
  }
}

}  // namespace
}  // namespace nanoserve

#endif  // !NANOSERVE_REAL_CUDA
