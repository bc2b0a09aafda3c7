// GEMM for prefill: Y = X Wᵀ.
//   X (m, k) fp32 row-major; W (n, k) row-major, storage type T; Y (m, n) fp32 row-major.
// Both operands are k-contiguous (each output is a dot product of a row of X and a row of W).
//
// Versions (each adds one idea, after siboehm/SGEMM_CUDA; `bench_kernels --kernel gemm`):
//   v01  one thread per output element, both operands read from global memory. Every X and W
//        value is fetched once per output that uses it: m*n*k loads for m*n*k multiply-adds.
//   v02  shared-memory tiling: a block loads a 16x16 tile of X and of W (coalesced, along k),
//        then every thread uses each staged value 16 times — global traffic / 16.
//   v03  2D register blocktiling (SGEMM_CUDA kernel 5): a 256-thread block owns a 64x64 tile
//        of Y and each thread a 4x4 sub-tile, so per k step a thread loads 4 + 4 values from
//        shared memory for 16 multiply-adds (v02: 2 loads per multiply-add). Shared memory
//        bandwidth, v02's limit, is no longer the bottleneck.
//
// Partial tiles (m, n, k not multiples of the tile) load zeros and skip the stores outside Y.
// launch_gemm dispatches to v03. Tests: tests/kernels/test_gemm.cpp (every version x dtype
// against oracle::matmul).
#include <cstdint>
#include <stdexcept>
#include <string>

#include "kernels/dtype.cuh"
#include "kernels/gemm.h"

namespace nanoserve {
namespace {

constexpr int kMaxGridY = 65535;

// ---------------------------------------------------------------------------------------------
// v01: naive. block (16, 16): threadIdx.x -> column n (Y stores coalesced, X reads broadcast),
// threadIdx.y -> row m. grid (ceil(n / 16), ceil(m / 16)).

constexpr int kV01Block = 16;

template <typename T>
__global__ void gemm_kernel_v01(const T* __restrict__ w, const float* __restrict__ x,
                                float* __restrict__ y, int m, int n, int k,
                                Epilogue epilogue) {
  const int col = blockIdx.x * kV01Block + threadIdx.x;
  const int row = blockIdx.y * kV01Block + threadIdx.y;
  if (row >= m || col >= n) return;
  const float* x_row = x + static_cast<std::int64_t>(row) * k;  // (k)
  const T* w_row = w + static_cast<std::int64_t>(col) * k;      // (k)
  float acc = 0.0f;
  for (int i = 0; i < k; ++i) acc += x_row[i] * to_float(w_row[i]);
  apply_epilogue(&y[static_cast<std::int64_t>(row) * n + col], acc, epilogue);
}

// ---------------------------------------------------------------------------------------------
// v02: shared-memory tiling. block (16, 16), grid (ceil(n / 16), ceil(m / 16)).
//
//   for each k tile:   xs[r][c] = X[m0 + r][k0 + c]     ws[r][c] = W[n0 + r][k0 + c]
//   thread (tx, ty):   Y[m0 + ty][n0 + tx] += sum_c xs[ty][c] * ws[tx][c]

constexpr int kV02Tile = 16;

template <typename T>
__global__ void gemm_kernel_v02(const T* __restrict__ w, const float* __restrict__ x,
                                float* __restrict__ y, int m, int n, int k,
                                Epilogue epilogue) {
  // +1 column of padding: in the inner loop the 16 threads of a row read ws[tx][c], addresses
  // 17 floats apart, i.e. 16 different banks; without it (16 apart) they would hit 2 banks.
  __shared__ float xs[kV02Tile][kV02Tile + 1];  // (m, k) tile of X
  __shared__ float ws[kV02Tile][kV02Tile + 1];  // (n, k) tile of W, converted to fp32

  const int tx = threadIdx.x;
  const int ty = threadIdx.y;
  const int m0 = blockIdx.y * kV02Tile;
  const int n0 = blockIdx.x * kV02Tile;
  const int row = m0 + ty;         // output row of this thread, and the X row it loads
  const int col = n0 + tx;         // output column of this thread
  const int w_load_row = n0 + ty;  // W row this thread loads (threads along k: coalesced)

  float acc = 0.0f;
  // Threads outside Y still load and reach every barrier; they only skip the final store.
  for (int k0 = 0; k0 < k; k0 += kV02Tile) {
    const int kk = k0 + tx;
    xs[ty][tx] = row < m && kk < k ? x[static_cast<std::int64_t>(row) * k + kk] : 0.0f;
    ws[ty][tx] =
        w_load_row < n && kk < k ? to_float(w[static_cast<std::int64_t>(w_load_row) * k + kk])
                                 : 0.0f;
    __syncthreads();  // the tiles are complete
    for (int c = 0; c < kV02Tile; ++c) acc += xs[ty][c] * ws[tx][c];
    __syncthreads();  // everyone is done with the tiles before the next iteration overwrites them
  }
  if (row < m && col < n) {
    apply_epilogue(&y[static_cast<std::int64_t>(row) * n + col], acc, epilogue);
  }
}

// ---------------------------------------------------------------------------------------------
// v03: 2D register blocktiling. block 256 threads, grid (ceil(n / 64), ceil(m / 64)).
//
//   block tile: Y[m0 .. m0+64) x [n0 .. n0+64), k in steps of kBK = 16
//   thread t:   tx = t % 16, ty = t / 16 -> Y rows m0 + 4ty .. +3, columns n0 + 4tx .. +3
//
//   shared (transposed, k-major):   xs[c][r] = X[m0 + r][k0 + c]   ws[c][r] = W[n0 + r][k0 + c]
//   per k step c a thread reads xs[c][4ty .. 4ty+3] and ws[c][4tx .. 4tx+3] (contiguous) and
//   does the 4x4 outer product into its registers.

constexpr int kBM = 64;   // rows of Y per block
constexpr int kBN = 64;   // columns of Y per block
constexpr int kBK = 16;   // k per shared-memory tile
constexpr int kTM = 4;    // rows of Y per thread
constexpr int kTN = 4;    // columns of Y per thread
constexpr int kV03Threads = (kBM / kTM) * (kBN / kTN);          // 256
constexpr int kV03Loads = kBM * kBK / kV03Threads;              // tile elements per thread: 4
// Padding of the k-major tiles: the loads below write xs[c][r] with c varying fastest across a
// warp; with unpadded rows of 64 floats all 16 values of c land in one bank (a 16-way conflict).
// Rows of 68 leave a 2-way conflict and keep each row 16-byte aligned for vector reads.
constexpr int kV03Pad = 4;
static_assert(kBM == kBN, "the load loop below fills both tiles with one index mapping");
static_assert(kBM * kBK % kV03Threads == 0, "each thread loads the same number of elements");

template <typename T>
__global__ void __launch_bounds__(kV03Threads)
    gemm_kernel_v03(const T* __restrict__ w, const float* __restrict__ x, float* __restrict__ y,
                    int m, int n, int k, Epilogue epilogue) {
  __shared__ __align__(16) float xs[kBK][kBM + kV03Pad];  // (k, m) tile of X, transposed
  __shared__ __align__(16) float ws[kBK][kBN + kV03Pad];  // (k, n) tile of W, transposed, fp32

  const int tid = threadIdx.x;
  const int tx = tid % (kBN / kTN);
  const int ty = tid / (kBN / kTN);
  const int m0 = blockIdx.y * kBM;
  const int n0 = blockIdx.x * kBN;

  float acc[kTM][kTN];
  NS_UNROLL
  for (int i = 0; i < kTM; ++i) {
    NS_UNROLL
    for (int j = 0; j < kTN; ++j) acc[i][j] = 0.0f;
  }

  for (int k0 = 0; k0 < k; k0 += kBK) {
    // Consecutive threads walk k within a row: 16 threads read 64 contiguous bytes of X.
    NS_UNROLL
    for (int l = 0; l < kV03Loads; ++l) {
      const int e = tid + l * kV03Threads;
      const int r = e / kBK;
      const int c = e % kBK;
      const int kk = k0 + c;
      const int xr = m0 + r;
      const int wr = n0 + r;
      xs[c][r] = xr < m && kk < k ? x[static_cast<std::int64_t>(xr) * k + kk] : 0.0f;
      ws[c][r] = wr < n && kk < k ? to_float(w[static_cast<std::int64_t>(wr) * k + kk]) : 0.0f;
    }
    __syncthreads();  // the tiles are complete

    NS_UNROLL
    for (int c = 0; c < kBK; ++c) {
      float a[kTM];
      float b[kTN];
      NS_UNROLL
      for (int i = 0; i < kTM; ++i) a[i] = xs[c][ty * kTM + i];
      NS_UNROLL
      for (int j = 0; j < kTN; ++j) b[j] = ws[c][tx * kTN + j];
      NS_UNROLL
      for (int i = 0; i < kTM; ++i) {
        NS_UNROLL
        for (int j = 0; j < kTN; ++j) acc[i][j] += a[i] * b[j];
      }
    }
    __syncthreads();  // everyone is done with the tiles before the next iteration overwrites them
  }

  NS_UNROLL
  for (int i = 0; i < kTM; ++i) {
    const int row = m0 + ty * kTM + i;
    NS_UNROLL
    for (int j = 0; j < kTN; ++j) {
      const int col = n0 + tx * kTN + j;
      if (row < m && col < n) {
        apply_epilogue(&y[static_cast<std::int64_t>(row) * n + col], acc[i][j], epilogue);
      }
    }
  }
}

// Launches `kernel` over row chunks of at most 65535 tiles each (the gridDim.y limit).
template <typename Kernel, typename T>
void launch_row_chunks(Kernel kernel, int tile_m, int tile_n, dim3 block, const T* w,
                       const float* x, float* y, int m, int n, int k, cudaStream_t stream,
                       Epilogue epilogue) {
  const int grid_x = (n + tile_n - 1) / tile_n;
  const std::int64_t rows_per_launch = static_cast<std::int64_t>(kMaxGridY) * tile_m;
  for (std::int64_t r0 = 0; r0 < m; r0 += rows_per_launch) {
    const int rows = static_cast<int>(m - r0 < rows_per_launch ? m - r0 : rows_per_launch);
    launch(kernel, dim3(grid_x, (rows + tile_m - 1) / tile_m), block, 0, stream, w,
           x + r0 * k, y + r0 * n, rows, n, k, epilogue);
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// launchers

template <typename T>
void launch_gemm_v01(const T* w, const float* x, float* y, int m, int n, int k,
                     cudaStream_t stream, Epilogue epilogue) {
  if (check_linear_args("launch_gemm_v01", w, x, y, m, n, k)) return;
  launch_row_chunks(gemm_kernel_v01<T>, kV01Block, kV01Block, dim3(kV01Block, kV01Block), w, x,
                    y, m, n, k, stream, epilogue);
}

template <typename T>
void launch_gemm_v02(const T* w, const float* x, float* y, int m, int n, int k,
                     cudaStream_t stream, Epilogue epilogue) {
  if (check_linear_args("launch_gemm_v02", w, x, y, m, n, k)) return;
  launch_row_chunks(gemm_kernel_v02<T>, kV02Tile, kV02Tile, dim3(kV02Tile, kV02Tile), w, x, y,
                    m, n, k, stream, epilogue);
}

template <typename T>
void launch_gemm_v03(const T* w, const float* x, float* y, int m, int n, int k,
                     cudaStream_t stream, Epilogue epilogue) {
  if (check_linear_args("launch_gemm_v03", w, x, y, m, n, k)) return;
  launch_row_chunks(gemm_kernel_v03<T>, kBM, kBN, dim3(kV03Threads), w, x, y, m, n, k, stream,
                    epilogue);
}

template <typename T>
void launch_gemm_version(int version, const T* w, const float* x, float* y, int m, int n, int k,
                         cudaStream_t stream, Epilogue epilogue) {
  switch (version) {
    case 1: return launch_gemm_v01(w, x, y, m, n, k, stream, epilogue);
    case 2: return launch_gemm_v02(w, x, y, m, n, k, stream, epilogue);
    case 3: return launch_gemm_v03(w, x, y, m, n, k, stream, epilogue);
    default:
      throw std::invalid_argument("launch_gemm_version: version " + std::to_string(version) +
                                  " does not exist (1.." + std::to_string(kGemmVersions) + ")");
  }
}

template <typename T>
void launch_gemm(const T* w, const float* x, float* y, int m, int n, int k, cudaStream_t stream,
                 Epilogue epilogue) {
  launch_gemm_v03(w, x, y, m, n, k, stream, epilogue);
}

#define NANOSERVE_INSTANTIATE_GEMM(T)                                                         \
  template void launch_gemm_v01<T>(const T*, const float*, float*, int, int, int,             \
                                   cudaStream_t, Epilogue);                                   \
  template void launch_gemm_v02<T>(const T*, const float*, float*, int, int, int,             \
                                   cudaStream_t, Epilogue);                                   \
  template void launch_gemm_v03<T>(const T*, const float*, float*, int, int, int,             \
                                   cudaStream_t, Epilogue);                                   \
  template void launch_gemm_version<T>(int, const T*, const float*, float*, int, int, int,    \
                                       cudaStream_t, Epilogue);                               \
  template void launch_gemm<T>(const T*, const float*, float*, int, int, int, cudaStream_t,   \
                               Epilogue);

NANOSERVE_INSTANTIATE_GEMM(float)
NANOSERVE_INSTANTIATE_GEMM(__half)
NANOSERVE_INSTANTIATE_GEMM(__nv_bfloat16)

#undef NANOSERVE_INSTANTIATE_GEMM

}  // namespace nanoserve
