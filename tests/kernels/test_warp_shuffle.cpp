// The four __shfl*_sync against their definitions in the CUDA C++ Programming Guide ("Warp
// Shuffle Functions"), for every width, in full and partial warps, for each payload type.
// Expected values are written from the guide's wording, not from the simulator's code.
#include <cstdint>
#include <cstring>
#include <vector>

#include "tests/kernels/kernel_test_support.h"

namespace nanoserve {
namespace {

using WarpShuffle = testing::DeviceTest;

enum class Shfl { kIdx, kUp, kDown, kXor };

// in/out: (blockDim.x,)
template <typename T>
__global__ void shuffle_kernel(const T* in, T* out, Shfl kind, int arg, int width) {
  const unsigned t = threadIdx.x;
  const T v = in[t];
  T r = v;
  switch (kind) {
    case Shfl::kIdx: r = __shfl_sync(0xffffffffu, v, arg, width); break;
    case Shfl::kUp: r = __shfl_up_sync(0xffffffffu, v, static_cast<unsigned>(arg), width); break;
    case Shfl::kDown:
      r = __shfl_down_sync(0xffffffffu, v, static_cast<unsigned>(arg), width);
      break;
    case Shfl::kXor: r = __shfl_xor_sync(0xffffffffu, v, arg, width); break;
  }
  out[t] = r;
}

// The thread whose value lane `t` of a block receives, or -1 where the guide leaves it undefined
// (the source lane does not exist in a partial warp).
int expected_source(Shfl kind, int t, int arg, int width, int block) {
  const int lane = t % 32;
  const int warp_base = t - lane;
  const int segment = lane / width;  // index of the caller's width-lane segment
  int src = lane;
  switch (kind) {
    case Shfl::kIdx:  // "srcLane modulo width", within the caller's segment
      src = segment * width + ((arg % width) + width) % width;
      break;
    case Shfl::kUp:  // "lane ID minus delta"; unchanged if that leaves the segment downwards
      src = lane % width >= arg ? lane - arg : lane;
      break;
    case Shfl::kDown:  // "lane ID plus delta"; unchanged if that leaves the segment upwards
      src = lane % width + arg < width ? lane + arg : lane;
      break;
    case Shfl::kXor:  // "XOR of lane ID with laneMask"; later segments give the own value
      src = (lane ^ arg) / width <= segment ? lane ^ arg : lane;
      break;
  }
  return warp_base + src < block ? warp_base + src : -1;
}

template <typename T>
T make_value(int t);
template <>
float make_value<float>(int t) {
  return 1.5f * static_cast<float>(t) - 7.0f;
}
template <>
double make_value<double>(int t) {
  return 1e10 + static_cast<double>(t);
}  // uses all 8 bytes
template <>
std::int64_t make_value<std::int64_t>(int t) {
  return (std::int64_t{1} << 40) * (t + 1) + t;
}
template <>
__half make_value<__half>(int t) {
  return __float2half(static_cast<float>(t));
}
template <>
__half2 make_value<__half2>(int t) {
  return __floats2half2_rn(static_cast<float>(t), -static_cast<float>(2 * t));
}
template <>
__nv_bfloat16 make_value<__nv_bfloat16>(int t) {
  return __float2bfloat16(static_cast<float>(t));
}

template <typename T>
void check_shuffles(int block) {
  std::vector<T> in(block);
  for (int t = 0; t < block; ++t) in[t] = make_value<T>(t);
  testing::DeviceBuffer<T> d_in(in);
  testing::DeviceBuffer<T> d_out(block);
  struct Case {
    Shfl kind;
    int arg;
  };
  const Case cases[] = {{Shfl::kIdx, 0},  {Shfl::kIdx, 5},  {Shfl::kIdx, 31},  {Shfl::kIdx, -1},
                        {Shfl::kIdx, 37}, {Shfl::kUp, 1},   {Shfl::kUp, 3},    {Shfl::kUp, 16},
                        {Shfl::kDown, 1}, {Shfl::kDown, 3}, {Shfl::kDown, 16}, {Shfl::kXor, 1},
                        {Shfl::kXor, 6},  {Shfl::kXor, 16}, {Shfl::kXor, 31}};
  for (int width : {1, 2, 4, 8, 16, 32}) {
    for (const Case& c : cases) {
      launch(shuffle_kernel<T>, dim3(1), dim3(block), 0, nullptr, d_in.get(), d_out.get(), c.kind,
             c.arg, width);
      const std::vector<T> out = d_out.to_host();
      for (int t = 0; t < block; ++t) {
        const int src = expected_source(c.kind, t, c.arg, width, block);
        if (src < 0) continue;
        ASSERT_EQ(std::memcmp(&out[t], &in[src], sizeof(T)), 0)
            << "block " << block << " kind " << static_cast<int>(c.kind) << " arg " << c.arg
            << " width " << width << ": thread " << t << " should hold thread " << src
            << "'s value";
      }
    }
  }
}

TEST_F(WarpShuffle, FloatFollowsTheGuideForEveryWidthInFullWarps) { check_shuffles<float>(64); }
TEST_F(WarpShuffle, FloatFollowsTheGuideInAPartialWarp) { check_shuffles<float>(48); }
TEST_F(WarpShuffle, DoubleMovesAllEightBytes) { check_shuffles<double>(48); }
TEST_F(WarpShuffle, Int64MovesAllEightBytes) { check_shuffles<std::int64_t>(48); }
TEST_F(WarpShuffle, HalfMovesItsTwoBytes) { check_shuffles<__half>(48); }
TEST_F(WarpShuffle, Half2MovesBothHalves) { check_shuffles<__half2>(48); }
TEST_F(WarpShuffle, Bfloat16MovesItsTwoBytes) { check_shuffles<__nv_bfloat16>(48); }

TEST(WarpShuffleReference, HandComputedSources) {
  // Spot checks of the reference itself against the guide's examples, worked by hand.
  EXPECT_EQ(expected_source(Shfl::kXor, 0, 1, 32, 32), 1);
  EXPECT_EQ(expected_source(Shfl::kXor, 5, 1, 32, 32), 4);
  EXPECT_EQ(expected_source(Shfl::kXor, 3, 8, 8, 32), 3);    // 3^8 = 11 is in the next segment
  EXPECT_EQ(expected_source(Shfl::kXor, 11, 8, 8, 32), 3);   // earlier segments may be read
  EXPECT_EQ(expected_source(Shfl::kUp, 17, 3, 16, 32), 17);  // 17 is lane 1 of its segment
  EXPECT_EQ(expected_source(Shfl::kUp, 20, 3, 16, 32), 17);
  EXPECT_EQ(expected_source(Shfl::kDown, 14, 3, 16, 32), 14);
  EXPECT_EQ(expected_source(Shfl::kDown, 12, 3, 16, 32), 15);
  EXPECT_EQ(expected_source(Shfl::kIdx, 9, 37, 8, 32), 13);    // 37 mod 8 = 5 in segment 8..15
  EXPECT_EQ(expected_source(Shfl::kIdx, 40, 20, 32, 48), -1);  // lane 20 of warp 1 is missing
}

// out: (blockDim.x,) warp sums by butterfly (xor) and, in lane 0, by shifting down.
__global__ void warp_sum_kernel(float* xor_sum, float* down_sum) {
  float v = static_cast<float>(threadIdx.x % 32);
  float w = v;
  for (int offset = 16; offset > 0; offset /= 2) {
    v += __shfl_xor_sync(0xffffffffu, v, offset);
    w += __shfl_down_sync(0xffffffffu, w, static_cast<unsigned>(offset));
  }
  xor_sum[threadIdx.x] = v;
  down_sum[threadIdx.x] = w;
}

TEST_F(WarpShuffle, ButterflyAndShiftDownReductionsSumTheWarp) {
  testing::DeviceBuffer<float> xor_sum(64);
  testing::DeviceBuffer<float> down_sum(64);
  launch(warp_sum_kernel, dim3(1), dim3(64), 0, nullptr, xor_sum.get(), down_sum.get());
  const std::vector<float> x = xor_sum.to_host();
  const std::vector<float> d = down_sum.to_host();
  for (int t = 0; t < 64; ++t) EXPECT_EQ(x[t], 496.0f) << t;  // 0 + 1 + ... + 31
  EXPECT_EQ(d[0], 496.0f);
  EXPECT_EQ(d[32], 496.0f);
}

// out: (blockDim.x,); only the lower 16 lanes of each warp take part, with a 16-lane mask.
__global__ void half_warp_kernel(int* out) {
  const unsigned lane = threadIdx.x % 32;
  out[threadIdx.x] = -1;
  if (lane < 16) out[threadIdx.x] = __shfl_xor_sync(0x0000ffffu, static_cast<int>(lane), 1, 16);
}

TEST_F(WarpShuffle, ASubsetMaskLetsOnlyThoseLanesTakePart) {
  testing::DeviceBuffer<int> out(64);
  launch(half_warp_kernel, dim3(1), dim3(64), 0, nullptr, out.get());
  const std::vector<int> got = out.to_host();
  for (int t = 0; t < 64; ++t) {
    const int lane = t % 32;
    EXPECT_EQ(got[t], lane < 16 ? (lane ^ 1) : -1) << t;
  }
}

}  // namespace
}  // namespace nanoserve
