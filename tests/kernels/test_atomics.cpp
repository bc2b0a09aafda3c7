// Atomics across threads and blocks. Every addend is chosen so that the exact sum is
// representable, which makes the result independent of the order of the additions.
#include <cstdint>
#include <vector>

#include "tests/kernels/kernel_test_support.h"

namespace nanoserve {
namespace {

using Atomics = testing::DeviceTest;

struct Counters {
  int i_add;
  unsigned u_add;
  unsigned long long ull_add;
  float f_add;
  double d_add;
  int i_max;
  int i_min;
  unsigned u_inc;
  int cas_add;
  unsigned or_bits;
  int exch_seen;
  __half h_add;
};

__global__ void atomics_kernel(Counters* c) {
  const int id = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  atomicAdd(&c->i_add, 1);
  atomicAdd(&c->u_add, 2u);
  atomicAdd(&c->ull_add, 1ull << 33);
  atomicAdd(&c->f_add, 0.5f);
  atomicAdd(&c->d_add, 0.25);
  atomicMax(&c->i_max, id);
  atomicMin(&c->i_min, id - 5);
  atomicInc(&c->u_inc, 9u);
  int old = c->cas_add;  // a lock-free add built from compare-and-swap
  for (;;) {
    const int seen = atomicCAS(&c->cas_add, old, old + 3);
    if (seen == old) break;
    old = seen;
  }
  atomicOr(&c->or_bits, 1u << (id % 32));
  atomicExch(&c->exch_seen, 1);
  if (id < 64) atomicAdd(&c->h_add, __float2half(1.0f));
}

TEST_F(Atomics, EveryThreadOfEveryBlockIsCountedOnce) {
  Counters init{};
  init.i_min = 1 << 30;
  init.h_add = __float2half(0.0f);
  testing::DeviceBuffer<Counters> c(std::vector<Counters>{init});
  constexpr int kBlocks = 25;
  constexpr int kThreads = 96;  // 2400 threads
  launch(atomics_kernel, dim3(kBlocks), dim3(kThreads), 0, nullptr, c.get());
  const Counters got = c.to_host()[0];
  constexpr int n = kBlocks * kThreads;
  EXPECT_EQ(got.i_add, n);
  EXPECT_EQ(got.u_add, 2u * n);
  EXPECT_EQ(got.ull_add, (1ull << 33) * n);
  EXPECT_EQ(got.f_add, 0.5f * n);
  EXPECT_EQ(got.d_add, 0.25 * n);
  EXPECT_EQ(got.i_max, n - 1);
  EXPECT_EQ(got.i_min, -5);
  EXPECT_EQ(got.u_inc, static_cast<unsigned>(n % 10));  // wraps to 0 after 9: 0..9, 0..9, ...
  EXPECT_EQ(got.cas_add, 3 * n);
  EXPECT_EQ(got.or_bits, 0xffffffffu);
  EXPECT_EQ(got.exch_seen, 1);
  EXPECT_EQ(__half2float(got.h_add), 64.0f);
}

}  // namespace
}  // namespace nanoserve
