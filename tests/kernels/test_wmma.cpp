// Tensor cores through nvcuda::wmma: single tiles of every shape, layout and accumulator type
// against a hand-computable exact product (small integers: every sum is exact); a GEMM built
// from 16x16x16 tiles against oracle::matmul at sizes that are not multiples of 16 (edges
// padded in shared memory), fp16 and bf16; and, in the simulator, every misuse as a launch
// error and the unspecified element-to-lane mapping made visible.
#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "common/allclose.h"
#include "common/oracle/ops.h"
#include "common/tolerances.h"
#include "tests/kernels/kernel_oracle_support.h"
#include "tests/kernels/kernel_test_support.h"

namespace nanoserve {
namespace {

namespace wmma = nvcuda::wmma;

// ---- one tile: d = a b + c ------------------------------------------------------------------

// a: (M, K) stored in LayoutA (ldm K if row-major, M if column-major); b: (K, N) in LayoutB
// (ldm N / K); c, d: (M, N) in `acc_layout` (ldm N / M). One warp.
template <int M, int N, int K, typename T, typename LayoutA, typename LayoutB, typename Acc>
__global__ void tile_kernel(const T* a, const T* b, const Acc* c, Acc* d, int acc_row_major) {
  constexpr bool a_row = std::is_same<LayoutA, wmma::row_major>::value;
  constexpr bool b_row = std::is_same<LayoutB, wmma::row_major>::value;
  const wmma::layout_t acc_layout = acc_row_major ? wmma::mem_row_major : wmma::mem_col_major;
  wmma::fragment<wmma::matrix_a, M, N, K, T, LayoutA> fa;
  wmma::fragment<wmma::matrix_b, M, N, K, T, LayoutB> fb;
  wmma::fragment<wmma::accumulator, M, N, K, Acc> fc;
  wmma::load_matrix_sync(fa, a, a_row ? K : M);
  wmma::load_matrix_sync(fb, b, b_row ? N : K);
  wmma::load_matrix_sync(fc, c, acc_row_major ? N : M, acc_layout);
  wmma::mma_sync(fc, fa, fb, fc);
  wmma::store_matrix_sync(d, fc, acc_row_major ? N : M, acc_layout);
}

template <typename T>
T to_storage_value(float v) {
  if constexpr (std::is_same<T, float>::value) {
    return v;
  } else {
    return from_float<T>(v);
  }
}

// Small integers in [-3, 3] (c in [-8, 8]): products and sums are exact in fp16 and fp32, so
// the result must equal the integer product exactly.
template <int M, int N, int K, typename T, typename LayoutA, typename LayoutB, typename Acc>
void expect_exact_tile(bool acc_row_major) {
  constexpr bool a_row = std::is_same<LayoutA, wmma::row_major>::value;
  constexpr bool b_row = std::is_same<LayoutB, wmma::row_major>::value;
  std::vector<int> a(M * K), b(K * N), c(M * N);
  for (int i = 0; i < M * K; ++i) a[i] = (i * 7 + 3) % 7 - 3;
  for (int i = 0; i < K * N; ++i) b[i] = (i * 5 + 1) % 7 - 3;
  for (int i = 0; i < M * N; ++i) c[i] = (i * 3) % 17 - 8;
  std::vector<T> a_mem(M * K), b_mem(K * N);
  std::vector<Acc> c_mem(M * N);
  for (int r = 0; r < M; ++r) {
    for (int k = 0; k < K; ++k) {
      a_mem[a_row ? r * K + k : k * M + r] = to_storage_value<T>(static_cast<float>(a[r * K + k]));
    }
  }
  for (int k = 0; k < K; ++k) {
    for (int n = 0; n < N; ++n) {
      b_mem[b_row ? k * N + n : n * K + k] = to_storage_value<T>(static_cast<float>(b[k * N + n]));
    }
  }
  for (int r = 0; r < M; ++r) {
    for (int n = 0; n < N; ++n) {
      c_mem[acc_row_major ? r * N + n : n * M + r] =
          to_storage_value<Acc>(static_cast<float>(c[r * N + n]));
    }
  }
  const testing::DeviceBuffer<T> da(a_mem);
  const testing::DeviceBuffer<T> db(b_mem);
  const testing::DeviceBuffer<Acc> dc(c_mem);
  testing::DeviceBuffer<Acc> dd(static_cast<std::size_t>(M * N));
  launch(tile_kernel<M, N, K, T, LayoutA, LayoutB, Acc>, dim3(1), dim3(32), 0, nullptr, da.get(),
         db.get(), dc.get(), dd.get(), acc_row_major ? 1 : 0);
  const std::vector<Acc> got = dd.to_host();
  int bad = 0;
  for (int r = 0; r < M; ++r) {
    for (int n = 0; n < N; ++n) {
      int want = c[r * N + n];
      for (int k = 0; k < K; ++k) want += a[r * K + k] * b[k * N + n];
      const float value = to_float(got[acc_row_major ? r * N + n : n * M + r]);
      if (value != static_cast<float>(want) && bad++ < 3) {
        ADD_FAILURE() << "m" << M << "n" << N << "k" << K << " d[" << r << "][" << n
                      << "] = " << value << ", want " << want;
      }
    }
  }
  EXPECT_EQ(bad, 0);
}

using Wmma = testing::DeviceTest;

TEST_F(Wmma, EveryShapeAndLayoutMultipliesExactlyWithFloatAccumulators) {
  using R = wmma::row_major;
  using C = wmma::col_major;
  expect_exact_tile<16, 16, 16, __half, R, R, float>(true);
  expect_exact_tile<16, 16, 16, __half, C, C, float>(false);
  expect_exact_tile<16, 16, 16, __half, R, C, float>(false);
  expect_exact_tile<32, 8, 16, __half, C, R, float>(true);
  expect_exact_tile<8, 32, 16, __half, R, C, float>(false);
  expect_exact_tile<16, 16, 16, __nv_bfloat16, R, C, float>(true);
  expect_exact_tile<32, 8, 16, __nv_bfloat16, R, R, float>(false);
  expect_exact_tile<8, 32, 16, __nv_bfloat16, C, C, float>(true);
}

TEST_F(Wmma, HalfAccumulatorsMultiplyExactly) {
  using R = wmma::row_major;
  using C = wmma::col_major;
  expect_exact_tile<16, 16, 16, __half, R, C, __half>(true);
  expect_exact_tile<32, 8, 16, __half, R, R, __half>(false);
  expect_exact_tile<8, 32, 16, __half, C, R, __half>(true);
}

// ---- a GEMM from 16x16x16 tiles -------------------------------------------------------------

constexpr int kTile = 16;
constexpr int kWarpsPerBlock = 4;  // a 2 x 2 arrangement of 16 x 16 output tiles

// x: (m, k) row-major; w: (n, k) row-major (y = x wᵀ, like oracle::matmul); y: (m, n) fp32.
// Each warp computes one 16 x 16 tile of y; the tiles of x and w are copied into shared memory
// with zeros beyond the matrix edges, so m, n and k need not be multiples of 16. w's tile is
// stored as (n, k), i.e. wᵀ in column-major order: matrix_b loads it col_major.
template <typename T>
__global__ void wmma_gemm_kernel(const T* x, const T* w, float* y, int m, int n, int k) {
  __shared__ __align__(32) T x_tile[kWarpsPerBlock][kTile * kTile];
  __shared__ __align__(32) T w_tile[kWarpsPerBlock][kTile * kTile];
  __shared__ __align__(32) float y_tile[kWarpsPerBlock][kTile * kTile];
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int row0 = (static_cast<int>(blockIdx.y) * 2 + warp / 2) * kTile;
  const int col0 = (static_cast<int>(blockIdx.x) * 2 + warp % 2) * kTile;
  const T zero = static_cast<T>(0.0f);
  wmma::fragment<wmma::accumulator, kTile, kTile, kTile, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  for (int k0 = 0; k0 < k; k0 += kTile) {
    for (int i = lane; i < kTile * kTile; i += 32) {
      const int r = i / kTile;
      const int kk = k0 + i % kTile;
      x_tile[warp][i] = row0 + r < m && kk < k ? x[static_cast<std::size_t>(row0 + r) * k + kk] : zero;
      w_tile[warp][i] = col0 + r < n && kk < k ? w[static_cast<std::size_t>(col0 + r) * k + kk] : zero;
    }
    __syncwarp();
    wmma::fragment<wmma::matrix_a, kTile, kTile, kTile, T, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, kTile, kTile, kTile, T, wmma::col_major> b;
    wmma::load_matrix_sync(a, x_tile[warp], kTile);
    wmma::load_matrix_sync(b, w_tile[warp], kTile);
    wmma::mma_sync(acc, a, b, acc);
    __syncwarp();  // the next iteration overwrites the tiles
  }
  wmma::store_matrix_sync(y_tile[warp], acc, kTile, wmma::mem_row_major);
  __syncwarp();
  for (int i = lane; i < kTile * kTile; i += 32) {
    const int r = row0 + i / kTile;
    const int c = col0 + i % kTile;
    if (r < m && c < n) y[static_cast<std::size_t>(r) * n + c] = y_tile[warp][i];
  }
}

template <typename T>
class WmmaGemm : public testing::DeviceTest {};
using LowPrecisionTypes = ::testing::Types<__half, __nv_bfloat16>;
TYPED_TEST_SUITE(WmmaGemm, LowPrecisionTypes, testing::StorageTypeNames);

TYPED_TEST(WmmaGemm, MatchesOracleOnAwkwardSizes) {
  using T = TypeParam;
  const std::vector<std::tuple<int, int, int>> shapes = {
      {1, 1, 1}, {16, 16, 16}, {17, 33, 15}, {5, 40, 100}, {45, 3, 31}, {64, 48, 80}};
  for (const auto& [m, n, k] : shapes) {
    const std::uint64_t seed = 500 + m * 7 + n * 3 + k;
    const std::vector<T> x = testing::to_storage<T>(testing::random_values(seed, 0, m * k, 1.0f));
    const std::vector<T> w = testing::to_storage<T>(testing::random_values(seed, 1, n * k, 1.0f));
    const testing::DeviceBuffer<T> dx(x);
    const testing::DeviceBuffer<T> dw(w);
    testing::DeviceBuffer<float> dy(static_cast<std::size_t>(m) * n);
    const dim3 grid((n + 2 * kTile - 1) / (2 * kTile), (m + 2 * kTile - 1) / (2 * kTile));
    launch(wmma_gemm_kernel<T>, grid, dim3(32 * kWarpsPerBlock), 0, nullptr, dx.get(), dw.get(),
           dy.get(), m, n, k);
    std::vector<float> want(static_cast<std::size_t>(m) * n);
    const std::vector<float> xf = testing::to_floats(x);
    const std::vector<float> wf = testing::to_floats(w);
    oracle::matmul(xf.data(), wf.data(), m, k, n, want.data());
    testing::expect_close(dy.to_host(), want, tol::kFp32DotReorder,
                          std::string(dtype_name(dtype_of<T>())) + " m=" + std::to_string(m) +
                              " n=" + std::to_string(n) + " k=" + std::to_string(k));
  }
}

#if !NANOSERVE_REAL_CUDA
// ---- misuse and the element mapping (simulator only) ----------------------------------------

using Frag16A = wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major>;
using Frag16B = wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major>;
using Frag16C = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

// mode 0: only the first 8 lanes go on; 1: divergent calls; 2: lane-dependent pointer;
// 3: misaligned pointer; 4: bad ldm; 5: plain load (for a partial-warp block).
__global__ void misuse_kernel(const __half* p, int mode) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  Frag16A a;
  if (mode == 0 && lane >= 8) return;
  if (mode == 1) {
    if (lane < 16) {
      wmma::load_matrix_sync(a, p, 16);
    } else {
      wmma::load_matrix_sync(a, p, 16);
    }
    return;
  }
  const __half* at = p;
  unsigned ldm = 16;
  if (mode == 2) at = p + (lane < 16 ? 0 : 16);
  if (mode == 3) at = p + 1;
  if (mode == 4) ldm = 20;
  wmma::load_matrix_sync(a, at, ldm);
}

void expect_misuse(int threads, int mode, const std::string& fragment) {
  testing::DeviceBuffer<__half> p(1024);
  testing::expect_cuda_error(
      [&] { launch(misuse_kernel, dim3(1), dim3(threads), 0, nullptr, p.get(), mode); },
      cudaErrorLaunchFailure, fragment);
}

TEST_F(Wmma, PartialWarpIsALaunchError) {
  expect_misuse(16, 5, "needs all 32 lanes of the warp, but only lanes 0x0000ffff");
}
TEST_F(Wmma, LanesThatReturnedEarlyAreALaunchError) {
  expect_misuse(32, 0, "only lanes 0x000000ff take part");
}
TEST_F(Wmma, DivergentCallIsALaunchError) { expect_misuse(32, 1, "divergent code"); }
TEST_F(Wmma, DifferentArgumentsAcrossLanesAreALaunchError) {
  expect_misuse(32, 2, "pass different arguments");
}
TEST_F(Wmma, MisalignedPointerIsALaunchError) { expect_misuse(32, 3, "32-byte) aligned"); }
TEST_F(Wmma, LeadingDimensionNotAMultipleOf16BytesIsALaunchError) {
  expect_misuse(32, 4, "multiple of 16 bytes");
}

// out: (16, 16) fp32. mode 0: element-wise work on x[] (portable); 1: writes the lane number
// into the accumulator (depends on the mapping); 2: changes A's elements by lane before the
// product (depends on the mapping, and breaks the equality of A's replicated elements).
__global__ void element_access_kernel(const __half* a_mem, const __half* b_mem, float* out,
                                      int mode) {
  const int lane = static_cast<int>(threadIdx.x);
  Frag16A a;
  Frag16B b;
  Frag16C c;
  wmma::load_matrix_sync(a, a_mem, 16);
  wmma::load_matrix_sync(b, b_mem, 16);
  wmma::fill_fragment(c, 1.0f);
  for (int i = 0; i < Frag16A::num_elements; ++i) {
    a.x[i] = mode == 2 ? __float2half(static_cast<float>(lane)) : __hmul(a.x[i], __float2half(2.0f));
  }
  wmma::mma_sync(c, a, b, c);
  for (int i = 0; i < Frag16C::num_elements; ++i) {
    c.x[i] = mode == 1 ? static_cast<float>(lane * 8 + i) : c.x[i] * 0.5f;
  }
  wmma::store_matrix_sync(out, c, 16, wmma::mem_row_major);
}

std::vector<float> run_element_access(int mode, sim::WmmaMapping mapping) {
  std::vector<__half> a(256), b(256);
  for (int i = 0; i < 256; ++i) {
    a[i] = __float2half(static_cast<float>(i % 5 - 2));
    b[i] = __float2half(static_cast<float>(i % 3 - 1));
  }
  const testing::DeviceBuffer<__half> da(a);
  const testing::DeviceBuffer<__half> db(b);
  testing::DeviceBuffer<float> out(256);
  const sim::WmmaMapping before = sim::wmma_mapping();
  sim::set_wmma_mapping(mapping);
  try {
    launch(element_access_kernel, dim3(1), dim3(32), 0, nullptr, da.get(), db.get(), out.get(),
           mode);
  } catch (...) {
    sim::set_wmma_mapping(before);
    throw;
  }
  sim::set_wmma_mapping(before);
  return out.to_host();
}

TEST_F(Wmma, ElementWiseFragmentWorkGivesTheSameResultUnderEveryMapping) {
  const std::vector<float> linear = run_element_access(0, sim::WmmaMapping::kLinear);
  EXPECT_EQ(linear, run_element_access(0, sim::WmmaMapping::kPermuted));
  // Hand-computed corner: d[0][0] = 0.5 * (1 + sum_k 2 a[0][k] b[k][0]), b col-major: b[k][0] =
  // b_mem[k].
  float want = 1.0f;
  for (int k = 0; k < 16; ++k) want += 2.0f * static_cast<float>(k % 5 - 2) * (k % 3 - 1);
  EXPECT_EQ(linear[0], 0.5f * want);
}

TEST_F(Wmma, MappingDependentElementAccessChangesWithTheMapping) {
  EXPECT_NE(run_element_access(1, sim::WmmaMapping::kLinear),
            run_element_access(1, sim::WmmaMapping::kPermuted));
}

TEST_F(Wmma, MappingDependentChangeOfReplicatedElementsIsALaunchError) {
  testing::expect_cuda_error([] { run_element_access(2, sim::WmmaMapping::kLinear); },
                             cudaErrorLaunchFailure, "unspecified element-to-lane mapping");
}
#endif

}  // namespace
}  // namespace nanoserve
