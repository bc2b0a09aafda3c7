// W8A16 / W4A16 GEMM for prefill: Y = X · dequant(W)ᵀ.
//   X (m, k) fp32 row-major; W (n, k) quantized (kernels/qlinear_common.cuh), n = w.rows,
//   k = w.cols; Y (m, n) fp32 row-major.
//
// Versions (each is the fp GEMM version of the same tiling with one change: the W tile is
// dequantized into shared memory as it is loaded; `bench_kernels --kernel qgemm`):
//   v01  gemm v02's tiling: a block loads 16x16 tiles of X and of W (W dequantized to fp32 on
//        the way into shared memory), and every thread uses each staged value 16 times. Each
//        weight is dequantized once per 16 rows of X.
//   v02  gemm v03's 2D register blocktiling: a 256-thread block owns a 64x64 tile of Y, each
//        thread a 4x4 sub-tile; each weight is dequantized once per 64 rows of X, so the
//        dequantization (a byte load, a group lookup, a scale) is ~1/64 of a multiply-add per
//        product and the kernel runs at the speed of the fp32 GEMM it is built on.
//
// The W loads read one code per element (consecutive threads walk k: 16 codes = 8 bytes of an
// INT4 row per half-warp). Prefill is not bandwidth-bound at these tile sizes, so wider code
// loads would buy little; tensor-core tiles (Marlin) are what a faster version needs.
//
// Partial tiles load zeros and skip the stores outside Y. launch_qgemm dispatches to v02.
// Tests: tests/kernels/test_qgemm.cpp (every version against oracle::matmul on the dequantized W).
#include <cstdint>
#include <stdexcept>
#include <string>

#include "kernels/qgemm.h"

namespace nanoserve {
namespace {

constexpr int kMaxGridY = 65535;

// ---------------------------------------------------------------------------------------------
// v01: 16x16 shared-memory tiles. block (16, 16), grid (ceil(n / 16), ceil(m / 16)).
//
//   for each k tile:   xs[r][c] = X[m0 + r][k0 + c]     ws[r][c] = dequant(W)[n0 + r][k0 + c]
//   thread (tx, ty):   Y[m0 + ty][n0 + tx] += sum_c xs[ty][c] * ws[tx][c]

constexpr int kV01Tile = 16;

__global__ void qgemm_kernel_v01(QuantizedWeightView w, const float* __restrict__ x,
                                 float* __restrict__ y, int m, Epilogue epilogue) {
  // +1 column: the inner loop's reads of ws[tx][c] then fall in 16 different banks.
  __shared__ float xs[kV01Tile][kV01Tile + 1];  // (m, k) tile of X
  __shared__ float ws[kV01Tile][kV01Tile + 1];  // (n, k) tile of W, dequantized

  const int n = w.rows;
  const int k = w.cols;
  const int tx = threadIdx.x;
  const int ty = threadIdx.y;
  const int m0 = blockIdx.y * kV01Tile;
  const int n0 = blockIdx.x * kV01Tile;
  const int row = m0 + ty;         // output row of this thread, and the X row it loads
  const int col = n0 + tx;         // output column of this thread
  const int w_load_row = n0 + ty;  // W row this thread dequantizes (threads along k)

  float acc = 0.0f;
  // Threads outside Y still load and reach every barrier; they only skip the final store.
  for (int k0 = 0; k0 < k; k0 += kV01Tile) {
    const int kk = k0 + tx;
    xs[ty][tx] = row < m && kk < k ? x[static_cast<std::int64_t>(row) * k + kk] : 0.0f;
    ws[ty][tx] = w_load_row < n && kk < k ? dequantize_element(w, w_load_row, kk) : 0.0f;
    __syncthreads();  // the tiles are complete
    for (int c = 0; c < kV01Tile; ++c) acc += xs[ty][c] * ws[tx][c];
    __syncthreads();  // everyone is done with the tiles before the next iteration overwrites them
  }
  if (row < m && col < n) {
    apply_epilogue(&y[static_cast<std::int64_t>(row) * n + col], acc, epilogue);
  }
}

// ---------------------------------------------------------------------------------------------
// v02: 2D register blocktiling. block 256 threads, grid (ceil(n / 64), ceil(m / 64)).
//
//   block tile: Y[m0 .. m0+64) x [n0 .. n0+64), k in steps of kBK = 16
//   thread t:   tx = t % 16, ty = t / 16 -> Y rows m0 + 4ty .. +3, columns n0 + 4tx .. +3
//   shared (transposed, k-major):  xs[c][r] = X[m0 + r][k0 + c]
//                                  ws[c][r] = dequant(W)[n0 + r][k0 + c]

constexpr int kBM = 64;  // rows of Y per block
constexpr int kBN = 64;  // columns of Y per block
constexpr int kBK = 16;  // k per shared-memory tile
constexpr int kTM = 4;   // rows of Y per thread
constexpr int kTN = 4;   // columns of Y per thread
constexpr int kV02Threads = (kBM / kTM) * (kBN / kTN);  // 256
constexpr int kV02Loads = kBM * kBK / kV02Threads;      // tile elements per thread: 4
// Rows of 68 instead of 64 floats: the loads write xs[c][r] with c varying fastest across a
// warp, which would put all 16 values of c in one bank; 68 leaves a 2-way conflict and keeps
// rows 16-byte aligned.
constexpr int kV02Pad = 4;
static_assert(kBM == kBN, "the load loop below fills both tiles with one index mapping");
static_assert(kBM * kBK % kV02Threads == 0, "each thread loads the same number of elements");

__global__ void __launch_bounds__(kV02Threads)
    qgemm_kernel_v02(QuantizedWeightView w, const float* __restrict__ x, float* __restrict__ y,
                     int m, Epilogue epilogue) {
  __shared__ __align__(16) float xs[kBK][kBM + kV02Pad];  // (k, m) tile of X, transposed
  __shared__ __align__(16) float ws[kBK][kBN + kV02Pad];  // (k, n) tile of W, dequantized

  const int n = w.rows;
  const int k = w.cols;
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
    // Consecutive threads walk k within a row: coalesced X reads, neighbouring codes of W.
    NS_UNROLL
    for (int l = 0; l < kV02Loads; ++l) {
      const int e = tid + l * kV02Threads;
      const int r = e / kBK;
      const int c = e % kBK;
      const int kk = k0 + c;
      const int xr = m0 + r;
      const int wr = n0 + r;
      xs[c][r] = xr < m && kk < k ? x[static_cast<std::int64_t>(xr) * k + kk] : 0.0f;
      ws[c][r] = wr < n && kk < k ? dequantize_element(w, wr, kk) : 0.0f;
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
void launch_row_chunks(void (*kernel)(QuantizedWeightView, const float*, float*, int, Epilogue),
                       int tile_m, int tile_n, dim3 block, const QuantizedWeightView& w,
                       const float* x, float* y, int m, cudaStream_t stream, Epilogue epilogue) {
  const int grid_x = (w.rows + tile_n - 1) / tile_n;
  const std::int64_t rows_per_launch = static_cast<std::int64_t>(kMaxGridY) * tile_m;
  for (std::int64_t r0 = 0; r0 < m; r0 += rows_per_launch) {
    const int rows = static_cast<int>(m - r0 < rows_per_launch ? m - r0 : rows_per_launch);
    launch(kernel, dim3(grid_x, (rows + tile_m - 1) / tile_m), block, 0, stream, w,
           x + r0 * w.cols, y + r0 * w.rows, rows, epilogue);
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// launchers

void launch_qgemm_v01(const QuantizedWeightView& w, const float* x, float* y, int m,
                      cudaStream_t stream, Epilogue epilogue) {
  if (check_quant_linear_args("launch_qgemm_v01", w, x, y, m)) return;
  launch_row_chunks(qgemm_kernel_v01, kV01Tile, kV01Tile, dim3(kV01Tile, kV01Tile), w, x, y, m,
                    stream, epilogue);
}

void launch_qgemm_v02(const QuantizedWeightView& w, const float* x, float* y, int m,
                      cudaStream_t stream, Epilogue epilogue) {
  if (check_quant_linear_args("launch_qgemm_v02", w, x, y, m)) return;
  launch_row_chunks(qgemm_kernel_v02, kBM, kBN, dim3(kV02Threads), w, x, y, m, stream, epilogue);
}

void launch_qgemm_version(int version, const QuantizedWeightView& w, const float* x, float* y,
                          int m, cudaStream_t stream, Epilogue epilogue) {
  switch (version) {
    case 1: return launch_qgemm_v01(w, x, y, m, stream, epilogue);
    case 2: return launch_qgemm_v02(w, x, y, m, stream, epilogue);
    default:
      throw std::invalid_argument("launch_qgemm_version: version " + std::to_string(version) +
                                  " does not exist (1.." + std::to_string(kQGemmVersions) + ")");
  }
}

void launch_qgemm(const QuantizedWeightView& w, const float* x, float* y, int m,
                  cudaStream_t stream, Epilogue epilogue) {
  launch_qgemm_v02(w, x, y, m, stream, epilogue);
}

}  // namespace nanoserve
