// Cooperative groups (thread block, tiled partitions of a warp, cg::reduce), __activemask,
// __constant__ memory through cudaMemcpyToSymbol / FromSymbol, and cudaMemcpy2D, against
// hand-computed results; misuse as errors with a message.
#include <string>
#include <vector>

#include "tests/kernels/kernel_test_support.h"

namespace nanoserve {
namespace {

namespace cg = cooperative_groups;

using CooperativeGroups = testing::DeviceTest;

// out: (blockDim.x, 6): rank in block, rank in tile, tile index, tile sum via cg::reduce, tile
// max via a shfl_down tree, and the rank 0 value broadcast by shfl.
template <unsigned Tile>
__global__ void tile_kernel(int* out) {
  const cg::thread_block block = cg::this_thread_block();
  const cg::thread_block_tile<Tile> tile = cg::tiled_partition<Tile>(block);
  const int t = static_cast<int>(block.thread_rank());
  const int value = t * 3 + 1;
  int max_value = value;
  for (unsigned offset = Tile / 2; offset > 0; offset /= 2) {
    const int other = tile.shfl_down(max_value, offset);
    max_value = other > max_value ? other : max_value;
  }
  const int sum = cg::reduce(tile, value, cg::plus<int>());
  const int first = tile.shfl(value, 0);
  block.sync();
  int* row = out + 6 * t;
  row[0] = t;
  row[1] = static_cast<int>(tile.thread_rank());
  row[2] = static_cast<int>(tile.meta_group_rank());
  row[3] = sum;
  row[4] = tile.thread_rank() == 0 ? max_value : -1;  // the tree's result lands in rank 0
  row[5] = first;
}

template <unsigned Tile>
void expect_tiles(int threads) {
  testing::DeviceBuffer<int> out(static_cast<std::size_t>(6 * threads));
  launch(tile_kernel<Tile>, dim3(1), dim3(threads), 0, nullptr, out.get());
  const std::vector<int> got = out.to_host();
  for (int t = 0; t < threads; ++t) {
    const int tile = t / static_cast<int>(Tile);
    const int base = tile * static_cast<int>(Tile);
    int sum = 0;
    for (int r = 0; r < static_cast<int>(Tile); ++r) sum += (base + r) * 3 + 1;
    const int* row = &got[6 * t];
    EXPECT_EQ(row[0], t);
    EXPECT_EQ(row[1], t % static_cast<int>(Tile));
    EXPECT_EQ(row[2], tile);
    EXPECT_EQ(row[3], sum) << "tile " << Tile << " thread " << t;
    EXPECT_EQ(row[4], t % static_cast<int>(Tile) == 0 ? (base + static_cast<int>(Tile) - 1) * 3 + 1 : -1);
    EXPECT_EQ(row[5], base * 3 + 1);
  }
}

TEST_F(CooperativeGroups, TiledPartitionsReduceAndShuffleWithinTheirTile) {
  expect_tiles<32>(64);
  expect_tiles<16>(64);
  expect_tiles<8>(32);
  expect_tiles<4>(32);
  expect_tiles<2>(32);
  expect_tiles<1>(32);
}

// out: (3,) : tile ballot of odd ranks, any(rank == 3), all(rank < 8) for tiles of 8.
__global__ void vote_kernel(unsigned* out) {
  const cg::thread_block_tile<8> tile = cg::tiled_partition<8>(cg::this_thread_block());
  const unsigned ballot = tile.ballot(tile.thread_rank() % 2 == 1);
  const int any = tile.any(tile.thread_rank() == 3);
  const int all = tile.all(tile.thread_rank() < 8);
  if (threadIdx.x == 8) {  // rank 0 of the second tile
    out[0] = ballot;
    out[1] = static_cast<unsigned>(any);
    out[2] = static_cast<unsigned>(all);
  }
}

TEST_F(CooperativeGroups, TileVotesSeeOnlyTheirTile) {
  testing::DeviceBuffer<unsigned> out(3);
  launch(vote_kernel, dim3(1), dim3(32), 0, nullptr, out.get());
  const std::vector<unsigned> got = out.to_host();
  EXPECT_EQ(got[0], 0xaau);  // ranks 1, 3, 5, 7 of the tile
  EXPECT_EQ(got[1], 1u);
  EXPECT_EQ(got[2], 1u);
}

// out: (blockDim.x,) __activemask() per thread
__global__ void active_mask_kernel(unsigned* out) { out[threadIdx.x] = __activemask(); }

TEST_F(CooperativeGroups, ActiveMaskCoversTheWarpsLanes) {
  testing::DeviceBuffer<unsigned> out(48);
  launch(active_mask_kernel, dim3(1), dim3(48), 0, nullptr, out.get());
  const std::vector<unsigned> got = out.to_host();
  EXPECT_EQ(got[0], 0xffffffffu);
  EXPECT_EQ(got[47], 0x0000ffffu);  // the partial second warp has 16 lanes
}

#if !NANOSERVE_REAL_CUDA
// A tile's operations are warp operations: one inside a branch that only part of the tile
// takes is a launch error (the rest of the tile reaches another call site).
__global__ void divergent_tile_kernel(int* out) {
  const cg::thread_block_tile<16> tile = cg::tiled_partition<16>(cg::this_thread_block());
  int v = static_cast<int>(tile.thread_rank());
  if (tile.thread_rank() < 4) {
    v = tile.shfl_down(v, 1);
  } else {
    v = tile.shfl_down(v, 2);
  }
  out[threadIdx.x] = v;
}

TEST_F(CooperativeGroups, DivergentTileShuffleIsALaunchError) {
  testing::DeviceBuffer<int> out(32);
  testing::expect_cuda_error(
      [&] { launch(divergent_tile_kernel, dim3(1), dim3(32), 0, nullptr, out.get()); },
      cudaErrorLaunchFailure, "divergent code");
}
#endif

// ---- __constant__ memory and pitched copies -------------------------------------------------

__constant__ float kScale[4];

// out: (4,) in[i] * kScale[i]
__global__ void constant_kernel(const float* in, float* out) {
  const int i = static_cast<int>(threadIdx.x);
  out[i] = in[i] * kScale[i];
}

using SymbolsAndPitchedCopies = testing::DeviceTest;

TEST_F(SymbolsAndPitchedCopies, ConstantMemoryIsSetAndReadThroughItsSymbol) {
  const std::vector<float> scale = {1.0f, 2.0f, -3.0f, 0.5f};
  CUDA_CHECK(cudaMemcpyToSymbol(kScale, scale.data(), sizeof(float) * 4));
  const float tail = 10.0f;  // offset copy: only the last element changes
  CUDA_CHECK(cudaMemcpyToSymbol(kScale, &tail, sizeof(float), 3 * sizeof(float)));
  const testing::DeviceBuffer<float> in(std::vector<float>{4.0f, 5.0f, 6.0f, 7.0f});
  testing::DeviceBuffer<float> out(4);
  launch(constant_kernel, dim3(1), dim3(4), 0, nullptr, in.get(), out.get());
  EXPECT_EQ(out.to_host(), (std::vector<float>{4.0f, 10.0f, -18.0f, 70.0f}));
  float back[4] = {};
  CUDA_CHECK(cudaMemcpyFromSymbol(back, kScale, sizeof back));
  EXPECT_EQ(back[1], 2.0f);
  EXPECT_EQ(back[3], 10.0f);
}

TEST_F(SymbolsAndPitchedCopies, Memcpy2DCopiesRowsBetweenPitches) {
  // A 3 x 4-float block out of a host image with a pitch of 6 floats into a device buffer with
  // a pitch of 5 floats, and back into a dense host array.
  std::vector<float> host(3 * 6);
  for (int i = 0; i < 18; ++i) host[i] = static_cast<float>(i);
  testing::DeviceBuffer<float> dev(3 * 5);
  CUDA_CHECK(cudaMemset(dev.get(), 0, 15 * sizeof(float)));
  CUDA_CHECK(cudaMemcpy2D(dev.get(), 5 * sizeof(float), host.data(), 6 * sizeof(float),
                          4 * sizeof(float), 3, cudaMemcpyHostToDevice));
  std::vector<float> dense(12);
  CUDA_CHECK(cudaMemcpy2D(dense.data(), 4 * sizeof(float), dev.get(), 5 * sizeof(float),
                          4 * sizeof(float), 3, cudaMemcpyDeviceToHost));
  EXPECT_EQ(dense, (std::vector<float>{0, 1, 2, 3, 6, 7, 8, 9, 12, 13, 14, 15}));
  EXPECT_EQ(dev.to_host()[4], 0.0f);  // the padding column is untouched
}

TEST_F(SymbolsAndPitchedCopies, Memcpy2DAsyncCopiesColumnsOfOneArrayIntoAnother) {
  // What tensor parallelism's logits gather does: a (2, 3) block with a pitch of 3 floats into
  // columns 2..4 of a (2, 6) array, on a stream.
  testing::DeviceBuffer<float> part(std::vector<float>{1, 2, 3, 4, 5, 6});
  testing::DeviceBuffer<float> whole(12);
  CUDA_CHECK(cudaMemset(whole.get(), 0, 12 * sizeof(float)));
  cudaStream_t stream = nullptr;
  CUDA_CHECK(cudaStreamCreate(&stream));
  CUDA_CHECK(cudaMemcpy2DAsync(whole.get() + 2, 6 * sizeof(float), part.get(), 3 * sizeof(float),
                               3 * sizeof(float), 2, cudaMemcpyDeviceToDevice, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  CUDA_CHECK(cudaStreamDestroy(stream));
  EXPECT_EQ(whole.to_host(), (std::vector<float>{0, 0, 1, 2, 3, 0, 0, 0, 4, 5, 6, 0}));
}

#if !NANOSERVE_REAL_CUDA
TEST_F(SymbolsAndPitchedCopies, Memcpy2DWidthBeyondAPitchIsAnError) {
  testing::DeviceBuffer<float> dev(16);
  std::vector<float> host(16);
  EXPECT_EQ(cudaMemcpy2D(dev.get(), 8, host.data(), 16, 12, 2, cudaMemcpyHostToDevice),
            cudaErrorInvalidPitchValue);
  EXPECT_NE(cuda_error_text(cudaGetLastError()).find("exceeds a pitch"), std::string::npos);
  EXPECT_EQ(cudaMemcpy2DAsync(dev.get(), 8, host.data(), 16, 12, 2, cudaMemcpyHostToDevice, 0),
            cudaErrorInvalidPitchValue);
  cudaGetLastError();
}

TEST_F(SymbolsAndPitchedCopies, Memcpy2DRowPastTheAllocationIsAnError) {
  testing::DeviceBuffer<float> dev(8);  // 2 rows of pitch 16 bytes = 32 bytes, 3 rows do not fit
  std::vector<float> host(12);
  EXPECT_EQ(cudaMemcpy2D(dev.get(), 16, host.data(), 16, 16, 3, cudaMemcpyHostToDevice),
            cudaErrorInvalidValue);
  cudaGetLastError();
}

TEST_F(SymbolsAndPitchedCopies, SymbolCopyFromDeviceMemoryWithAHostKindIsAnError) {
  testing::DeviceBuffer<float> dev(4);
  EXPECT_EQ(cudaMemcpyToSymbol(kScale, dev.get(), sizeof(float) * 4, 0, cudaMemcpyHostToDevice),
            cudaErrorInvalidValue);
  EXPECT_NE(cuda_error_text(cudaGetLastError()).find("is device memory"), std::string::npos);
  EXPECT_EQ(cudaMemcpyToSymbol(kScale, dev.get(), 4, 0, cudaMemcpyDeviceToHost),
            cudaErrorInvalidMemcpyDirection);
  cudaGetLastError();
}
#endif

}  // namespace
}  // namespace nanoserve
