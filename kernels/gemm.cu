// GEMM for prefill: Y = X Wᵀ, for dense weights (launch_gemm_*, kernels/gemm.h) and for
// W8A16 / W4A16 quantized ones (launch_qgemm_*, kernels/qgemm.h).
//   X (m, k) row-major in activation type A (widened to fp32 as it is staged); W (n, k)
//   row-major; Y (m, n) row-major in A or fp32, rounded once on store.
// Both operands are k-contiguous (each output is a dot product of a row of X and a row of W).
//
// Every kernel is written once over an operand loader (`W` below): `DenseWeights<T>`
// (kernels/linear_common.cuh: a weight in storage type T, converted to fp32) or `QuantWeights`
// (kernels/qlinear_common.cuh: a code dequantized, s · (q − z), with the group looked up through
// g_idx when there is one). The loader is called where a W value enters the computation, so the
// quantized GEMM dequantizes each weight once per tile of X rows — once per 16 rows in v02, per
// 64 in v03 — and runs at the speed of the tiling it is built on. Version N is the same idea for
// both (`bench_kernels --kernel gemm` / `--kernel qgemm`):
//
// Versions (each adds one idea, after siboehm/SGEMM_CUDA):
//   v01  one thread per output element, both operands read from global memory. Every X and W
//        value is fetched (and dequantized) once per output that uses it: m*n*k loads for
//        m*n*k multiply-adds.
//   v02  shared-memory tiling: a block loads a 16x16 tile of X and of W (coalesced, along k),
//        then every thread uses each staged value 16 times — global traffic / 16.
//   v03  2D register blocktiling (SGEMM_CUDA kernel 5): a 256-thread block owns a 64x64 tile
//        of Y and each thread a 4x4 sub-tile, so per k step a thread loads 4 + 4 values from
//        shared memory for 16 multiply-adds (v02: 2 loads per multiply-add). Shared memory
//        bandwidth, v02's limit, is no longer the bottleneck; a weight's dequantization (a byte
//        load, a group lookup, a scale) is ~1/64 of a multiply-add per product.
//
// The quantized W loads read one code per element (consecutive threads walk k: 16 codes = 8
// bytes of an INT4 row per half-warp). Prefill is not bandwidth-bound at these tile sizes, so
// wider code loads would buy little; tensor-core tiles (Marlin) are what a faster version needs.
//
// v03 also takes Epilogue::kSwiGLU over W = [gate; up]: a block's 64 tile columns are the gate
// and up rows of 32 outputs, interleaved, so a thread's 4×4 tile holds whole (gate, up) pairs
// and stores silu(gate) · up; v01 and v02 refuse it.
//
// Partial tiles (m, n, k not multiples of the tile) load zeros and skip the stores outside Y.
// launch_gemm and launch_qgemm dispatch to v03. Tests: tests/kernels/test_gemm.cpp and
// test_qgemm.cpp (every version against oracle::matmul, on the dequantized W for qgemm).
#include <cstdint>

#include "kernels/gemm.h"
#include "kernels/kernel_args.h"
#include "kernels/linear_common.cuh"
#include "kernels/qgemm.h"
#include "kernels/qlinear_common.cuh"

namespace nanoserve {
namespace {

// ---------------------------------------------------------------------------------------------
// v01: naive. block (16, 16): threadIdx.x -> column n (Y stores coalesced, X reads broadcast),
// threadIdx.y -> row m. grid (ceil(n / 16), ceil(m / 16)).

constexpr int kV01Block = 16;

template <typename W, typename X, typename Y>
__global__ void gemm_kernel_v01(W w, const X* __restrict__ x, Y* __restrict__ y, int m,
                                Epilogue epilogue) {
  const int n = w.rows, k = w.cols;
  const int col = blockIdx.x * kV01Block + threadIdx.x;
  const int row = blockIdx.y * kV01Block + threadIdx.y;
  if (row >= m || col >= n) return;
  const X* x_row = x + static_cast<std::int64_t>(row) * k;  // (k)
  float acc = 0.0f;
  for (int i = 0; i < k; ++i) acc += to_float(x_row[i]) * w.at(col, i);
  apply_epilogue(&y[static_cast<std::int64_t>(row) * n + col], acc, epilogue);
}

// ---------------------------------------------------------------------------------------------
// v02: shared-memory tiling. block (16, 16), grid (ceil(n / 16), ceil(m / 16)).
//
//   for each k tile:   xs[r][c] = X[m0 + r][k0 + c]     ws[r][c] = W[n0 + r][k0 + c]
//   thread (tx, ty):   Y[m0 + ty][n0 + tx] += sum_c xs[ty][c] * ws[tx][c]

constexpr int kV02Tile = 16;

template <typename W, typename X, typename Y>
__global__ void gemm_kernel_v02(W w, const X* __restrict__ x, Y* __restrict__ y, int m,
                                Epilogue epilogue) {
  // +1 column of padding: in the inner loop the 16 threads of a row read ws[tx][c], addresses
  // 17 floats apart, i.e. 16 different banks; without it (16 apart) they would hit 2 banks.
  __shared__ float xs[kV02Tile][kV02Tile + 1];  // (m, k) tile of X
  __shared__ float ws[kV02Tile][kV02Tile + 1];  // (n, k) tile of W, as fp32

  const int n = w.rows, k = w.cols;
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
    xs[ty][tx] = row < m && kk < k ? to_float(x[static_cast<std::int64_t>(row) * k + kk]) : 0.0f;
    ws[ty][tx] = w_load_row < n && kk < k ? w.at(w_load_row, kk) : 0.0f;
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

template <typename W, typename X, typename Y>
__global__ void __launch_bounds__(kV03Threads)
    gemm_kernel_v03(W w, const X* __restrict__ x, Y* __restrict__ y, int m,
                    Epilogue epilogue) {
  __shared__ __align__(16) float xs[kBK][kBM + kV03Pad];  // (k, m) tile of X, transposed
  __shared__ __align__(16) float ws[kBK][kBN + kV03Pad];  // (k, n) tile of W, transposed, fp32

  const int n = w.rows, k = w.cols;
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

  // The W row behind each tile column this thread loads (n: past the edge, zeros). kSwiGLU
  // (W = [gate; up], Y with h = n / 2 columns): the block's 64 tile columns are its 32 outputs'
  // gate and up rows interleaved — gate o, up o, gate o+1, … — so each thread's 4 columns are
  // two whole (gate, up) pairs and the epilogue needs nothing from another thread.
  const bool swiglu = epilogue == Epilogue::kSwiGLU;
  const int n_out = epilogue_out_features(n, epilogue);  // columns of Y
  int w_row[kV03Loads];
  NS_UNROLL
  for (int l = 0; l < kV03Loads; ++l) {
    const int r = (tid + l * kV03Threads) / kBK;
    const int o = blockIdx.x * (kBN / 2) + r / 2;  // kSwiGLU: the output of tile column r
    w_row[l] = !swiglu ? n0 + r : o >= n_out ? n : r % 2 == 0 ? o : n_out + o;
  }

  for (int k0 = 0; k0 < k; k0 += kBK) {
    // Consecutive threads walk k within a row: 16 threads read 64 contiguous bytes of X (and
    // neighbouring weights, or codes of a quantized W).
    NS_UNROLL
    for (int l = 0; l < kV03Loads; ++l) {
      const int e = tid + l * kV03Threads;
      const int r = e / kBK;
      const int c = e % kBK;
      const int kk = k0 + c;
      const int xr = m0 + r;
      const int wr = w_row[l];
      xs[c][r] = xr < m && kk < k ? to_float(x[static_cast<std::int64_t>(xr) * k + kk]) : 0.0f;
      ws[c][r] = wr < n && kk < k ? w.at(wr, kk) : 0.0f;
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
    if (swiglu) {
      NS_UNROLL
      for (int p = 0; p < kTN / 2; ++p) {  // pair p: columns 2p (gate) and 2p + 1 (up)
        const int col = blockIdx.x * (kBN / 2) + tx * (kTN / 2) + p;
        if (row < m && col < n_out) {
          y[static_cast<std::int64_t>(row) * n_out + col] =
              from_float<Y>(silu_mul(acc[i][2 * p], acc[i][2 * p + 1]));
        }
      }
      continue;
    }
    NS_UNROLL
    for (int j = 0; j < kTN; ++j) {
      const int col = n0 + tx * kTN + j;
      if (row < m && col < n) {
        apply_epilogue(&y[static_cast<std::int64_t>(row) * n + col], acc[i][j], epilogue);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// launchers

// Launches `kernel` over row chunks of at most 65535 tiles each (the gridDim.y limit).
template <typename W, typename X, typename Y>
void launch_row_chunks(void (*kernel)(W, const X*, Y*, int, Epilogue), int tile_m,
                       int tile_n, dim3 block, const W& w, const X* x, Y* y, int m,
                       cudaStream_t stream, Epilogue epilogue) {
  const int grid_x = (w.rows + tile_n - 1) / tile_n;
  const std::int64_t rows_per_launch = static_cast<std::int64_t>(kargs::kMaxGridYZ) * tile_m;
  for (std::int64_t r0 = 0; r0 < m; r0 += rows_per_launch) {
    const int rows = static_cast<int>(m - r0 < rows_per_launch ? m - r0 : rows_per_launch);
    launch(kernel, dim3(grid_x, (rows + tile_m - 1) / tile_m), block, 0, stream, w,
           x + r0 * w.cols, y + r0 * epilogue_out_features(w.rows, epilogue), rows, epilogue);
  }
}

// Version `version` (1..3) of the GEMM over loader `w`; the public launchers checked the
// arguments.
template <typename W, typename X, typename Y>
void run_gemm(int version, const W& w, const X* x, Y* y, int m, cudaStream_t stream,
              Epilogue epilogue) {
  if (version == 1) {
    launch_row_chunks(gemm_kernel_v01<W, X, Y>, kV01Block, kV01Block, dim3(kV01Block, kV01Block),
                      w, x, y, m, stream, epilogue);
  } else if (version == 2) {
    launch_row_chunks(gemm_kernel_v02<W, X, Y>, kV02Tile, kV02Tile, dim3(kV02Tile, kV02Tile), w,
                      x, y, m, stream, epilogue);
  } else {
    launch_row_chunks(gemm_kernel_v03<W, X, Y>, kBM, kBN, dim3(kV03Threads), w, x, y, m, stream,
                      epilogue);
  }
}

template <int kVersion, typename T, typename X, typename Y>
void dense_gemm(const char* op, const T* w, const X* x, Y* y, int m, int n, int k,
                cudaStream_t stream, Epilogue epilogue) {
  check_epilogue(op, n, epilogue, kVersion == 3);
  if (check_linear_args(op, w, x, y, m, n, k)) return;
  run_gemm(kVersion, DenseWeights<T>{w, n, k}, x, y, m, stream, epilogue);
}

template <int kVersion, typename X, typename Y>
void quant_gemm(const char* op, const QuantizedWeightView& w, const X* x, Y* y, int m,
                cudaStream_t stream, Epilogue epilogue) {
  check_epilogue(op, w.rows, epilogue, kVersion == 3);
  if (check_quant_linear_args(op, w, x, y, m, sizeof(X), sizeof(Y))) return;
  run_gemm(kVersion, QuantWeights{w}, x, y, m, stream, epilogue);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// dispatch: dense W (gemm.h), then quantized W (qgemm.h); launch_gemm / launch_qgemm are v03

NANOSERVE_DENSE_LINEAR_LAUNCHER(launch_gemm_v01, dense_gemm, 1,
                                NANOSERVE_DENSE_LINEAR_INSTANTIATE_FP32)
NANOSERVE_DENSE_LINEAR_LAUNCHER(launch_gemm_v02, dense_gemm, 2,
                                NANOSERVE_DENSE_LINEAR_INSTANTIATE_FP32)
NANOSERVE_DENSE_LINEAR_LAUNCHER(launch_gemm_v03, dense_gemm, 3,
                                NANOSERVE_DENSE_LINEAR_INSTANTIATE_FP32)
NANOSERVE_DENSE_LINEAR_LAUNCHER(launch_gemm, dense_gemm, 3,
                                NANOSERVE_DENSE_LINEAR_INSTANTIATE)
NANOSERVE_DENSE_LINEAR_VERSION_LAUNCHER(launch_gemm_version, dense_gemm, kGemmVersions)

NANOSERVE_QUANT_LINEAR_LAUNCHER(launch_qgemm_v01, quant_gemm, 1,
                                NANOSERVE_QUANT_LINEAR_INSTANTIATE_FP32)
NANOSERVE_QUANT_LINEAR_LAUNCHER(launch_qgemm_v02, quant_gemm, 2,
                                NANOSERVE_QUANT_LINEAR_INSTANTIATE_FP32)
NANOSERVE_QUANT_LINEAR_LAUNCHER(launch_qgemm_v03, quant_gemm, 3,
                                NANOSERVE_QUANT_LINEAR_INSTANTIATE_FP32)
NANOSERVE_QUANT_LINEAR_LAUNCHER(launch_qgemm, quant_gemm, 3,
                                NANOSERVE_QUANT_LINEAR_INSTANTIATE)
NANOSERVE_QUANT_LINEAR_VERSION_LAUNCHER(launch_qgemm_version, quant_gemm, kQGemmVersions)

}  // namespace nanoserve
