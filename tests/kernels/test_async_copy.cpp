// Async global→shared copies (__pipeline_memcpy_async / commit / wait_prior): hand-computed
// copies with zero fill, a double-buffered tiled GEMM against the oracle at awkward sizes (runs
// on a GPU too), and — in the simulator — the visibility rule and every misuse as launch errors.
#include <cstdint>
#include <cstring>
#include <tuple>
#include <vector>

#include "common/allclose.h"
#include "common/oracle/ops.h"
#include "common/tolerances.h"
#include "tests/kernels/kernel_oracle_support.h"
#include "tests/kernels/kernel_test_support.h"
#if !NANOSERVE_REAL_CUDA
#include "kernels/sim/racecheck.h"  // racecheck_enabled()
#endif

namespace nanoserve {
namespace {

using AsyncCopy = testing::DeviceTest;

// Each thread copies 4 floats (16 bytes) of `in` into shared memory, the last `zfill` bytes
// zero-filled, waits, and writes them out.
__global__ void copy_through_shared(const float* in, float* out, int zfill) {
  __shared__ __align__(16) float tile[64 * 4];
  const int t = static_cast<int>(threadIdx.x);
  __pipeline_memcpy_async(&tile[4 * t], &in[4 * t], 16, static_cast<size_t>(zfill));
  __pipeline_commit();
  __pipeline_wait_prior(0);
  for (int i = 0; i < 4; ++i) out[4 * t + i] = tile[4 * t + i];
}

TEST_F(AsyncCopy, CopiesAndZeroFillsTheTail) {
  std::vector<float> in(256);
  for (int i = 0; i < 256; ++i) in[i] = static_cast<float>(i) + 0.5f;
  DeviceBuffer<float> d_in(in), d_out(256);
  for (int zfill : {0, 4, 8, 12, 16}) {
    launch(copy_through_shared, dim3(1), dim3(64), 0, nullptr,
           static_cast<const float*>(d_in.get()), d_out.get(), zfill);
    const std::vector<float> out = d_out.to_host();
    for (int i = 0; i < 256; ++i) {
      const bool zeroed = (i % 4) >= 4 - zfill / 4;
      ASSERT_EQ(out[i], zeroed ? 0.0f : in[i]) << "zfill=" << zfill << " i=" << i;
    }
  }
}

constexpr int kTile = 16;

// C[m][n] = sum_k A[m][k] * W[n][k] (Y = X Wᵀ, as oracle::matmul), 16x16 output tiles, one
// thread per output, K in steps of 16 with two shared buffers: the copies of step t+1 are in
// flight while step t is computed. Elements past the edges are zero-filled (a valid, aligned
// source address is passed for them, as the hardware requires).
__global__ void gemm_double_buffered(const float* A, const float* W, float* C, int M, int N,
                                     int K) {
  __shared__ __align__(16) float As[2][kTile][kTile];
  __shared__ __align__(16) float Ws[2][kTile][kTile];
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  const int row = static_cast<int>(blockIdx.y) * kTile + ty;
  const int wrow = static_cast<int>(blockIdx.x) * kTile + ty;  // the W row this thread loads
  const int col = static_cast<int>(blockIdx.x) * kTile + tx;
  const int steps = (K + kTile - 1) / kTile;
  auto load = [&](int step, int buffer) {
    const int k = step * kTile + tx;
    const bool a_in = row < M && k < K;
    const bool w_in = wrow < N && k < K;
    __pipeline_memcpy_async(&As[buffer][ty][tx], a_in ? &A[static_cast<long>(row) * K + k] : A, 4,
                            a_in ? 0 : 4);
    __pipeline_memcpy_async(&Ws[buffer][ty][tx], w_in ? &W[static_cast<long>(wrow) * K + k] : W, 4,
                            w_in ? 0 : 4);
    __pipeline_commit();
  };
  load(0, 0);
  float acc = 0.0f;
  for (int step = 0; step < steps; ++step) {
    const int buffer = step & 1;
    if (step + 1 < steps) {
      load(step + 1, buffer ^ 1);
      __pipeline_wait_prior(1);  // this step's batch is complete, the next one may be in flight
    } else {
      __pipeline_wait_prior(0);
    }
    __syncthreads();  // every thread's copies of this step are visible to all
    for (int k = 0; k < kTile; ++k) acc += As[buffer][ty][k] * Ws[buffer][tx][k];
    __syncthreads();  // before the next step's copies overwrite the other buffer
  }
  if (row < M && col < N) C[static_cast<long>(row) * N + col] = acc;
}

TEST_F(AsyncCopy, DoubleBufferedGemmMatchesTheOracleOnAwkwardSizes) {
  const std::vector<std::tuple<int, int, int>> shapes = {
      {1, 1, 1}, {17, 33, 3}, {16, 16, 16}, {33, 17, 47}, {65, 31, 129}, {5, 70, 1001}};
  for (const auto& [m, n, k] : shapes) {
    const std::vector<float> a =
        testing::random_values(13, 0, static_cast<std::size_t>(m) * k, 0.0f, 1.0f);
    const std::vector<float> w =
        testing::random_values(13, 1, static_cast<std::size_t>(n) * k, 0.0f, 1.0f);
    DeviceBuffer<float> da(a), dw(w), dc(static_cast<std::size_t>(m) * n);
    launch(gemm_double_buffered, dim3((n + kTile - 1) / kTile, (m + kTile - 1) / kTile),
           dim3(kTile, kTile), 0, nullptr, static_cast<const float*>(da.get()),
           static_cast<const float*>(dw.get()), dc.get(), m, n, k);
    std::vector<float> want(static_cast<std::size_t>(m) * n);
    oracle::matmul(a.data(), w.data(), m, k, n, want.data());
    const CloseResult r = allclose(dc.to_host(), want, tol::kFp32DotReorder);
    EXPECT_TRUE(r.ok) << "m=" << m << " n=" << n << " k=" << k << ": " << r.summary();
  }
}

#if !NANOSERVE_REAL_CUDA  // the simulator's enforcement of the rules

// Two batches; waits for all but the newest, then reads both destinations.
__global__ void wait_prior_one(const float* in, float* out) {
  __shared__ __align__(16) float s[8];
  __pipeline_memcpy_async(&s[0], &in[0], 16);
  __pipeline_commit();
  __pipeline_memcpy_async(&s[4], &in[4], 16);
  __pipeline_commit();
  __pipeline_wait_prior(1);
  for (int i = 0; i < 8; ++i) out[i] = s[i];  // s[4..7] are read before their wait: poison
  __pipeline_wait_prior(0);
  for (int i = 0; i < 8; ++i) out[8 + i] = s[i];
}

TEST_F(AsyncCopy, DestinationIsPoisonUntilTheWaitThatCompletesItsBatch) {
  if (sim::racecheck_enabled()) {
    GTEST_SKIP() << "the race checker reports this early read (tests/kernels/test_racecheck.cpp)";
  }
  const std::vector<float> in = {1, 2, 3, 4, 5, 6, 7, 8};
  DeviceBuffer<float> d_in(in), d_out(16);
  launch(wait_prior_one, dim3(1), dim3(1), 0, nullptr, static_cast<const float*>(d_in.get()),
         d_out.get());
  const std::vector<float> out = d_out.to_host();
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out[i], in[i]);
  for (int i = 4; i < 8; ++i) {
    std::uint32_t bits = 0;
    std::memcpy(&bits, &out[i], 4);
    EXPECT_EQ(bits, 0xffffffffu) << "element " << i << " was visible before its wait";
  }
  for (int i = 0; i < 8; ++i) EXPECT_EQ(out[8 + i], in[i]);
}

// mode 0: size 3; 1: misaligned source; 2: host source; 3: global destination;
// 4: the destination written while the copy is in flight.
__global__ void misuse(const float* in, float* global_out, const float* host, int mode) {
  __shared__ __align__(16) float s[8];
  switch (mode) {
    case 0:
      __pipeline_memcpy_async(&s[0], in, 3);
      break;
    case 1:
      __pipeline_memcpy_async(&s[0], &in[1], 16);
      break;
    case 2:
      __pipeline_memcpy_async(&s[0], host, 4);
      break;
    case 3:
      __pipeline_memcpy_async(global_out, in, 4);
      break;
    default:
      __pipeline_memcpy_async(&s[0], in, 4);
      s[0] = 1.0f;  // too early
      break;
  }
  __pipeline_commit();
  __pipeline_wait_prior(0);
}

TEST_F(AsyncCopy, MisuseIsALaunchErrorNamingTheProblem) {
  DeviceBuffer<float> d_in(std::vector<float>(8, 1.0f)), d_out(8);
  static const float host[4] = {1, 2, 3, 4};
  const char* expected[] = {"must be 4, 8 or 16", "aligned to 16", "not inside a cudaMalloc",
                            "must be shared memory", "written before __pipeline_wait_prior"};
  for (int mode = 0; mode < 5; ++mode) {
    testing::expect_cuda_error(
        [&] {
          launch(misuse, dim3(1), dim3(1), 0, nullptr, static_cast<const float*>(d_in.get()),
                 d_out.get(), host, mode);
        },
        cudaErrorLaunchFailure, expected[mode]);
  }
}

#endif  // !NANOSERVE_REAL_CUDA

}  // namespace
}  // namespace nanoserve
