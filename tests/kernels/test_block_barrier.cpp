// __syncthreads and its counting variants: they release when every live thread has arrived,
// threads that returned early do not hold them up, and a shared-memory tree reduction — the
// canonical barrier-dependent kernel — is exact.
#include <vector>

#include "tests/kernels/kernel_test_support.h"

namespace nanoserve {
namespace {

using BlockBarrier = testing::DeviceTest;

// out: (4,) = count, and(all), and(all but one), or(one)
__global__ void counting_barrier_kernel(int* out) {
  const int t = static_cast<int>(threadIdx.x);
  const int count = __syncthreads_count(t % 7 == 0);
  const int all = __syncthreads_and(t < 100);
  const int all_but_one = __syncthreads_and(t != 42);
  const int one = __syncthreads_or(t == 57);
  const int none = __syncthreads_or(0);
  if (t == 0) {
    out[0] = count;
    out[1] = all;
    out[2] = all_but_one;
    out[3] = one;
    out[4] = none;
  }
}

TEST_F(BlockBarrier, CountAndOrVariantsAggregateEveryThreadsPredicate) {
  testing::DeviceBuffer<int> out(5);
  launch(counting_barrier_kernel, dim3(1), dim3(100), 0, nullptr, out.get());
  const std::vector<int> got = out.to_host();
  EXPECT_EQ(got[0], 15);  // t = 0, 7, ..., 98
  EXPECT_NE(got[1], 0);
  EXPECT_EQ(got[2], 0);
  EXPECT_NE(got[3], 0);
  EXPECT_EQ(got[4], 0);
}

// out: (blockDim.x,); threads >= live return at once, the others exchange through shared
// memory across two barriers.
__global__ void early_exit_kernel(int* out, int live) {
  __shared__ int slot[128];
  const int t = static_cast<int>(threadIdx.x);
  out[t] = -1;
  if (t >= live) return;
  slot[t] = t + 1000;
  const int arrived = __syncthreads_count(1);
  const int neighbour = slot[(t + 1) % live];
  __syncthreads();
  slot[t] = arrived;
  __syncthreads();
  out[t] = neighbour + slot[(t + 7) % live] * 100000;
}

TEST_F(BlockBarrier, ThreadsThatReturnedEarlyDoNotHoldItUp) {
  testing::DeviceBuffer<int> out(128);
  launch(early_exit_kernel, dim3(2), dim3(128), 0, nullptr, out.get(), 40);
  const std::vector<int> got = out.to_host();
  for (int t = 0; t < 128; ++t) {
    // The counting barrier saw exactly the 40 live threads.
    EXPECT_EQ(got[t], t < 40 ? (t + 1) % 40 + 1000 + 40 * 100000 : -1) << t;
  }
}

// in: (gridDim.x * blockDim.x,), out: (gridDim.x,) block sums by a shared-memory tree.
template <int kBlock>
__global__ void tree_sum_kernel(const float* in, float* out) {
  __shared__ float partial[kBlock];
  const unsigned t = threadIdx.x;
  partial[t] = in[blockIdx.x * kBlock + t];
  __syncthreads();
  for (unsigned stride = kBlock / 2; stride > 0; stride /= 2) {
    if (t < stride) partial[t] += partial[t + stride];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = partial[0];
}

template <int kBlock>
void check_tree_sum() {
  constexpr int kBlocks = 3;
  std::vector<float> in(kBlocks * kBlock);
  for (int i = 0; i < kBlocks * kBlock; ++i) in[i] = static_cast<float>(i % kBlock);
  testing::DeviceBuffer<float> d_in(in);
  testing::DeviceBuffer<float> d_out(kBlocks);
  launch(tree_sum_kernel<kBlock>, dim3(kBlocks), dim3(kBlock), 0, nullptr, d_in.get(), d_out.get());
  // 0 + 1 + ... + (kBlock - 1), exact in float for these sizes.
  for (float sum : d_out.to_host()) EXPECT_EQ(sum, kBlock * (kBlock - 1) / 2.0f);
}

TEST_F(BlockBarrier, TreeReductionOf256ThreadsIsExact) { check_tree_sum<256>(); }
TEST_F(BlockBarrier, TreeReductionOf1024ThreadsIsExact) { check_tree_sum<1024>(); }

}  // namespace
}  // namespace nanoserve
