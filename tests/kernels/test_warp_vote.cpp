// __ballot_sync, __any_sync, __all_sync and __syncwarp against their definitions, including a
// partial warp (a 48-thread block: warp 1 has lanes 0..15 only) and subset masks. The expected
// bit patterns are worked out by hand in the comments.
#include <vector>

#include "tests/kernels/kernel_test_support.h"

namespace nanoserve {
namespace {

using WarpVote = testing::DeviceTest;

// out: (3 * blockDim.x,) = ballot, any, all per thread
__global__ void vote_kernel(unsigned* out, int predicate_kind) {
  const unsigned t = threadIdx.x;
  const unsigned lane = t % 32;
  int p = 0;
  switch (predicate_kind) {
    case 0: p = t % 3 == 0; break;  // every third thread of the block
    case 1: p = lane < 16; break;   // lower half of each warp
    case 2: p = 0; break;
  }
  out[3 * t + 0] = __ballot_sync(0xffffffffu, p);
  out[3 * t + 1] = static_cast<unsigned>(__any_sync(0xffffffffu, p));
  out[3 * t + 2] = static_cast<unsigned>(__all_sync(0xffffffffu, p));
}

std::vector<unsigned> run_vote(int block, int predicate_kind) {
  testing::DeviceBuffer<unsigned> out(3 * block);
  launch(vote_kernel, dim3(1), dim3(block), 0, nullptr, out.get(), predicate_kind);
  return out.to_host();
}

TEST_F(WarpVote, BallotSetsTheBitsOfLanesWithATruePredicate) {
  const std::vector<unsigned> out = run_vote(48, 0);
  // Warp 0: threads 0,3,...,30 -> bits 0,3,...,30 = 0x49249249.
  // Warp 1: threads 33,36,39,42,45 are lanes 1,4,7,10,13 -> 0x2492.
  for (int t = 0; t < 32; ++t) EXPECT_EQ(out[3 * t], 0x49249249u) << t;
  for (int t = 32; t < 48; ++t) EXPECT_EQ(out[3 * t], 0x00002492u) << t;
}

TEST_F(WarpVote, AnyAndAllLookOnlyAtLanesThatExist) {
  const std::vector<unsigned> out = run_vote(48, 1);
  for (int t = 0; t < 32; ++t) {
    EXPECT_EQ(out[3 * t + 0], 0x0000ffffu) << t;
    EXPECT_EQ(out[3 * t + 1], 1u) << t;  // some lanes < 16
    EXPECT_EQ(out[3 * t + 2], 0u) << t;  // lanes 16..31 exist and fail
  }
  for (int t = 32; t < 48; ++t) {
    EXPECT_EQ(out[3 * t + 0], 0x0000ffffu) << t;
    EXPECT_EQ(out[3 * t + 2], 1u) << t;  // warp 1 only has lanes 0..15: all of them pass
  }
}

TEST_F(WarpVote, AllFalseGivesAnEmptyBallot) {
  const std::vector<unsigned> out = run_vote(64, 2);
  for (int t = 0; t < 64; ++t) {
    EXPECT_EQ(out[3 * t + 0], 0u);
    EXPECT_EQ(out[3 * t + 1], 0u);
    EXPECT_EQ(out[3 * t + 2], 0u);
  }
}

// out: (blockDim.x,); the odd lanes vote among themselves with mask 0xaaaaaaaa.
__global__ void odd_lane_ballot_kernel(unsigned* out) {
  const unsigned lane = threadIdx.x % 32;
  out[threadIdx.x] = 0;
  if (lane % 2 == 1) out[threadIdx.x] = __ballot_sync(0xaaaaaaaau, lane % 4 == 1);
}

TEST_F(WarpVote, ASubsetMaskBallotsOnlyThoseLanes) {
  testing::DeviceBuffer<unsigned> out(32);
  launch(odd_lane_ballot_kernel, dim3(1), dim3(32), 0, nullptr, out.get());
  const std::vector<unsigned> got = out.to_host();
  // Lanes 1, 5, 9, ..., 29 have lane % 4 == 1: bits 1, 5, ... = 0x22222222.
  for (int t = 0; t < 32; ++t) EXPECT_EQ(got[t], t % 2 == 1 ? 0x22222222u : 0u) << t;
}

// out: (blockDim.x,); lane-to-lane exchange through shared memory, ordered by __syncwarp.
__global__ void syncwarp_exchange_kernel(int* out) {
  __shared__ int slot[64];
  const unsigned t = threadIdx.x;
  slot[t] = static_cast<int>(t) * 10;
  __syncwarp();
  const unsigned warp_base = t - t % 32;
  out[t] = slot[warp_base + (t + 1) % 32];
}

TEST_F(WarpVote, SyncwarpMakesEveryLanesWriteVisibleToItsNeighbour) {
  testing::DeviceBuffer<int> out(64);
  launch(syncwarp_exchange_kernel, dim3(1), dim3(64), 0, nullptr, out.get());
  const std::vector<int> got = out.to_host();
  for (int t = 0; t < 64; ++t) EXPECT_EQ(got[t], (t - t % 32 + (t + 1) % 32) * 10) << t;
}

}  // namespace
}  // namespace nanoserve
