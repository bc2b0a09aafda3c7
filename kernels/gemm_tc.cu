// Tensor-core GEMM (launch_gemm_tc, kernels/gemm_tc.h): Y (m, n) = X (m, k) · W (n, k)ᵀ with X
// and W in T (fp16 or bf16), fp32 accumulation through nvcuda::wmma m16n16k16, Y in OutT (fp32
// or T).
//
// One 16x16 tile of Y is the sum over k0 of A · B with (CUDA programming guide, "Warp Matrix
// Functions"):
//   A = X[m0 .. m0+16)[k0 .. k0+16)       matrix_a, row_major, ldm = row pitch of X
//   B[kk][j] = W[n0 + j][k0 + kk]         matrix_b, col_major, ldm = row pitch of W
// i.e. the rows of W, k-contiguous as nn.Linear stores them, are read as the columns of B: no
// transpose is ever materialized. The element-to-lane mapping of a fragment is unspecified, so
// every epilogue goes through store_matrix_sync into shared memory and is applied element-wise
// from there (the simulator checks this: tests run under two mappings).
//
// Versions (each adds one idea, after siboehm/SGEMM_CUDA; `bench_kernels --kernel gemm_tc`):
//   v01  one warp per 16x16 tile of Y, fragments loaded straight from global memory. Every X
//        and W value is fetched once per 16 outputs that use it (the tensor core's own reuse),
//        and each load is a strided 16-row gather. m, n, k must be multiples of 16 and W, X
//        32-byte aligned (gemm_tc_v01_supports): v01 has no edge handling, it throws.
//   v02  block tiles in shared memory: 4 warps own a 64x64 tile of Y, each warp a 32x32 piece
//        as 2x2 accumulators, and k advances in steps of 32. A tile of X and one of W are
//        staged in shared memory with coalesced 16-byte loads, zero-padded beyond the edges, so
//        any m, n, k works; every staged value feeds 2 fragments of the warp and 2 warps, and
//        global traffic per multiply-add falls 4x against v01. The epilogue stages the 64x64
//        fp32 result in shared memory and writes Y coalesced, bounds-checked.
//   v03  v02 with a double-buffered main loop: while the warps multiply tile t, the copies of
//        tile t+1 are in flight (`__pipeline_memcpy_async`, cp.async on sm_80+: global to shared
//        without passing through registers), so load latency hides behind tensor-core work.
//        Chunks a 16-byte copy cannot take (past an edge of X or W, or misaligned because k is
//        not a multiple of 8) are written synchronously, which is legal in the buffer nobody
//        reads until the next barrier. Costs twice v02's tile memory (20 KiB per block).
//
// v02 and v03 also take Epilogue::kSwiGLU over W = [gate; up] (2h rows): a block owns 32
// outputs and stages their 32 gate rows and 32 up rows as its 64-row W tile
// (tile_source_row), so the epilogue finds both sums of an output in the same row of cs and
// stores silu(gate) · up — the (m, 2h) intermediate never reaches global memory. v01 refuses it.
//
// launch_qgemm_tc (W4A16 / W8A16) is v03 over another W loader: QuantTileW dequantizes each
// (64, 32) tile of W from its codes (qlinear_common.cuh: any group size, act-order) into shared
// memory, rounded to T once because the tensor core multiplies T, while X's tiles still arrive
// asynchronously. Each weight is dequantized once per 64 rows of X.
//
// Tests: tests/kernels/test_gemm_tc.cpp and test_qgemm_tc.cpp (every version, fp16 and bf16,
// OutT float and T, both epilogues, awkward sizes, against oracle::matmul on the same rounded
// inputs).
#include "kernels/gemm_tc.h"

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "kernels/dtype.cuh"
#include "kernels/kernel_args.h"
#include "kernels/vec_load.cuh"

namespace nanoserve {
namespace {

namespace wmma = nvcuda::wmma;

constexpr int kFrag = 16;  // M = N = K of one WMMA operation
constexpr int kWarp = 32;

using FragAcc = wmma::fragment<wmma::accumulator, kFrag, kFrag, kFrag, float>;
template <typename T>
using FragA = wmma::fragment<wmma::matrix_a, kFrag, kFrag, kFrag, T, wmma::row_major>;
template <typename T>
using FragB = wmma::fragment<wmma::matrix_b, kFrag, kFrag, kFrag, T, wmma::col_major>;

// One element of Y from its fp32 sum, rounded to OutT once (kAccumulate: after the add).
template <typename OutT>
__device__ __forceinline__ void write_out(OutT* out, float sum, Epilogue epilogue) {
  if (epilogue == Epilogue::kAccumulate) sum += to_float(*out);
  *out = from_float<OutT>(sum);
}

// The dynamic shared memory, rounded up to 128 bytes: WMMA pointers must be 32-byte aligned,
// and CUDA (like the simulator) promises only 16 for the dynamic block. Every launch asks for
// kSmemAlign bytes more than it uses.
constexpr std::size_t kSmemAlign = 128;
template <typename U>
__device__ __forceinline__ U* aligned_smem() {
  NS_DYNAMIC_SHARED(unsigned char, raw);
  const std::uintptr_t p = reinterpret_cast<std::uintptr_t>(raw);
  return reinterpret_cast<U*>((p + kSmemAlign - 1) & ~static_cast<std::uintptr_t>(kSmemAlign - 1));
}

// ---------------------------------------------------------------------------------------------
// v01: one warp per 16x16 tile of Y. block: kV01Warps warps side by side along n;
// grid (ceil(n / (16 kV01Warps)), m / 16).

constexpr int kV01Warps = 4;

template <typename T, typename OutT>
__global__ void __launch_bounds__(kV01Warps * kWarp)
    gemm_tc_kernel_v01(const T* __restrict__ w, const T* __restrict__ x, OutT* __restrict__ y,
                       int m, int n, int k, Epilogue epilogue) {
  const int warp = static_cast<int>(threadIdx.x) / kWarp;
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const int m0 = static_cast<int>(blockIdx.y) * kFrag;
  const int n0 = (static_cast<int>(blockIdx.x) * kV01Warps + warp) * kFrag;
  if (n0 >= n) return;  // the whole warp: WMMA calls take all 32 lanes or none
  (void)m;              // m0 < m by the grid; m is a multiple of 16

  FragAcc acc;
  wmma::fill_fragment(acc, 0.0f);
  const T* x_rows = x + static_cast<std::int64_t>(m0) * k;  // (16, k) rows of X
  const T* w_rows = w + static_cast<std::int64_t>(n0) * k;  // (16, k) rows of W
  for (int k0 = 0; k0 < k; k0 += kFrag) {
    FragA<T> a;
    FragB<T> b;
    wmma::load_matrix_sync(a, x_rows + k0, static_cast<unsigned>(k));
    wmma::load_matrix_sync(b, w_rows + k0, static_cast<unsigned>(k));
    wmma::mma_sync(acc, a, b, acc);
  }

  float* const stage = aligned_smem<float>() + warp * kFrag * kFrag;  // (16, 16) this warp's
  wmma::store_matrix_sync(stage, acc, kFrag, wmma::mem_row_major);
  __syncwarp();  // the warp's stores are visible to all its lanes
  for (int e = lane; e < kFrag * kFrag; e += kWarp) {
    const int r = e / kFrag;
    const int c = e % kFrag;
    write_out(&y[static_cast<std::int64_t>(m0 + r) * n + n0 + c], stage[e], epilogue);
  }
}

// ---------------------------------------------------------------------------------------------
// v02 and v03: 64x64 block tiles in shared memory. block 128 threads = 2x2 warps, each warp a
// 32x32 piece of Y (2x2 accumulators); grid (ceil(n / 64), ceil(m / 64)).
//
//   shared, per stage:  xs[r][c] = X[m0 + r][k0 + c]   ws[r][c] = W[n0 + r][k0 + c]   (64 x 32)
//   warp (wm, wn):      Y[m0 + 32 wm ..][n0 + 32 wn ..] += xs[32 wm ..] · ws[32 wn ..]ᵀ
//   epilogue:           cs[r][c] (64 x 64 fp32, over the tiles) -> Y, bounds-checked

constexpr int kBM = 64;  // rows of Y per block
constexpr int kBN = 64;  // columns of Y per block
constexpr int kBK = 32;  // k per shared-memory tile
constexpr int kWarpsM = 2;
constexpr int kWarpsN = 2;
constexpr int kFragsM = kBM / kWarpsM / kFrag;  // 2 accumulators down per warp
constexpr int kFragsN = kBN / kWarpsN / kFrag;  // 2 across
constexpr int kThreads = kWarpsM * kWarpsN * kWarp;  // 128
// Row pitch of xs / ws in elements: 32 + 8. The 16 extra bytes keep ldm a multiple of 16 bytes
// and every fragment 32-byte aligned, and shift successive rows by 20 banks, so the 8 rows of
// 16 bytes a fragment load reads at once fall in 8 different groups of 4 banks (a pitch of 32,
// 16 banks, would put them in 2: a 4-way conflict).
constexpr int kLds = kBK + 8;
// Row pitch of cs in floats: a multiple of 4 (ldm) that also staggers the rows' banks.
constexpr int kLdc = kBN + 4;
constexpr int kChunk = 8;                         // elements of T in one 16-byte copy
constexpr int kChunksPerRow = kBK / kChunk;       // 4
constexpr int kChunksPerThread = kBM * kChunksPerRow / kThreads;  // 2 per operand
constexpr int kStage = (kBM + kBN) * kLds;        // elements of T per stage (xs, then ws)
static_assert(kBM == kBN, "load_tile fills xs and ws with one index mapping");
static_assert(kBM * kChunksPerRow % kThreads == 0, "every thread copies the same chunks");

// Element-by-element copy of one chunk, zeros past the edges of the (rows, k) matrix.
template <typename T>
__device__ __forceinline__ void copy_chunk_sync(T* dst, const T* src, int rows, int k, int row,
                                                int col) {
  const T zero = from_float<T>(0.0f);
  const T* p = row < rows ? src + static_cast<std::int64_t>(row) * k : nullptr;
  NS_UNROLL
  for (int i = 0; i < kChunk; ++i) dst[i] = p != nullptr && col + i < k ? p[col + i] : zero;
}

// The address of a whole, 16-byte aligned chunk at (row, col), or null.
template <typename T>
__device__ __forceinline__ const T* whole_chunk(const T* src, int rows, int k, int row, int col) {
  if (row >= rows || col + kChunk > k) return nullptr;
  const T* p = src + static_cast<std::int64_t>(row) * k + col;
  return aligned16(p) ? p : nullptr;
}

// Copies one chunk of the (rows, k) matrix `src` at (row, col) to `dst` (shared, 16-byte
// aligned): a 16-byte load when the chunk is whole and aligned, else element by element;
// `kAsync`: a __pipeline_memcpy_async instead of the 16-byte load.
template <bool kAsync, typename T>
__device__ __forceinline__ void copy_chunk(T* dst, const T* src, int rows, int k, int row,
                                           int col) {
  const T* p = whole_chunk(src, rows, k, row, col);
  if (p == nullptr) {
    copy_chunk_sync(dst, src, rows, k, row, col);
  } else if (kAsync) {
    __pipeline_memcpy_async(dst, p, 16);
  } else {
#if NANOSERVE_REAL_CUDA
    *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(p);
#else
    std::memcpy(dst, p, 16);
#endif
  }
}

// The row of the (rows, k) matrix `src` behind tile row r: row0 + r, or — for W = [gate; up]
// under kSwiGLU (gate_half = h > 0, the block's outputs o0 = row0 / 2 ..) — the gate row of
// output o0 + r for r < 32 and the up row h + o0 + r - 32 for the rest; `rows` (past the edge:
// zeros) where the output is past h.
__device__ __forceinline__ int tile_source_row(int r, int row0, int rows, int gate_half) {
  if (gate_half == 0) return row0 + r;
  const int o = row0 / 2 + r % (kBN / 2);
  return o >= gate_half ? rows : r < kBN / 2 ? o : gate_half + o;
}

// Fills the X half of a stage with the k tile at k0 (or W's, through tile_source_row).
// Consecutive threads take consecutive chunks of a row: 4 threads read 64 contiguous bytes.
template <bool kAsync, typename T>
__device__ __forceinline__ void load_rows(T* tile, const T* src, int rows, int k, int row0,
                                          int k0, int gate_half = 0) {
  NS_UNROLL
  for (int l = 0; l < kChunksPerThread; ++l) {
    const int chunk = static_cast<int>(threadIdx.x) + l * kThreads;
    const int r = chunk / kChunksPerRow;
    const int c = chunk % kChunksPerRow * kChunk;
    copy_chunk<kAsync>(tile + r * kLds + c, src, rows, k,
                       tile_source_row(r, row0, rows, gate_half), k0 + c);
  }
}

// The W operand of the tiled kernels: how a (kBN, kBK) tile of W gets into shared memory
// (its rows through tile_source_row: `gate_half` > 0 under kSwiGLU). DenseTileW copies it like
// X; QuantTileW (the W4A16 / W8A16 kernel) dequantizes it.
template <typename T>
struct DenseTileW {
  const T* w;  // (n, k) row-major
  template <bool kAsync>
  __device__ __forceinline__ void load(T* ws, int n, int k, int n0, int k0, int gate_half) const {
    load_rows<kAsync>(ws, w, n, k, n0, k0, gate_half);
  }
};

// W = s · (q − z) dequantized element by element (any group size, act-order) and rounded to T
// once, zeros past the edges; consecutive threads walk k (neighbouring nibbles of a row).
// Synchronous: a code is not a T, so there is nothing to copy asynchronously.
template <typename T>
struct QuantTileW {
  QuantizedWeightView v;  // (n, k) codes, scales, zeros, g_idx
  template <bool kAsync>
  __device__ __forceinline__ void load(T* ws, int n, int k, int n0, int k0, int gate_half) const {
    const T zero = from_float<T>(0.0f);
    for (int e = static_cast<int>(threadIdx.x); e < kBN * kBK; e += kThreads) {
      const int r = e / kBK;
      const int c = e % kBK;
      const int row = tile_source_row(r, n0, n, gate_half);
      ws[r * kLds + c] =
          row < n && k0 + c < k ? from_float<T>(dequantize_element(v, row, k0 + c)) : zero;
    }
  }
};

// Fills one stage (xs, then ws) with the k tile at k0.
template <bool kAsync, typename W, typename T>
__device__ __forceinline__ void load_tile(T* stage, const T* x, const W& w, int m, int n, int k,
                                          int m0, int n0, int k0, int gate_half) {
  load_rows<kAsync>(stage, x, m, k, m0, k0);
  w.template load<kAsync>(stage + kBM * kLds, n, k, n0, k0, gate_half);
}

// The warp's 2x2 accumulators += its slices of one stage.
template <typename T>
__device__ __forceinline__ void mma_stage(FragAcc (&acc)[kFragsM][kFragsN], const T* stage,
                                          int warp_m, int warp_n) {
  const T* const xs = stage + warp_m * kFragsM * kFrag * kLds;
  const T* const ws = stage + kBM * kLds + warp_n * kFragsN * kFrag * kLds;
  NS_UNROLL
  for (int kk = 0; kk < kBK; kk += kFrag) {
    FragA<T> a[kFragsM];
    FragB<T> b[kFragsN];
    NS_UNROLL
    for (int i = 0; i < kFragsM; ++i)
      wmma::load_matrix_sync(a[i], xs + i * kFrag * kLds + kk, kLds);
    NS_UNROLL
    for (int j = 0; j < kFragsN; ++j)
      wmma::load_matrix_sync(b[j], ws + j * kFrag * kLds + kk, kLds);
    NS_UNROLL
    for (int i = 0; i < kFragsM; ++i) {
      NS_UNROLL
      for (int j = 0; j < kFragsN; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
    }
  }
}

// Epilogue: accumulators -> cs (shared, over the tiles: the caller has passed a barrier after
// the last mma_stage) -> Y, one row of the tile per 64 consecutive threads, bounds-checked.
// kSwiGLU: the tile's columns are 32 gate sums then their 32 up sums (tile_source_row); Y gets
// silu_mul of each pair, n / 2 columns.
template <typename OutT>
__device__ __forceinline__ void store_tile(const FragAcc (&acc)[kFragsM][kFragsN], OutT* y,
                                           int m, int n, int m0, int n0, int warp_m, int warp_n,
                                           Epilogue epilogue) {
  float* const cs = aligned_smem<float>();  // (kBM, kLdc)
  NS_UNROLL
  for (int i = 0; i < kFragsM; ++i) {
    NS_UNROLL
    for (int j = 0; j < kFragsN; ++j) {
      const int r = (warp_m * kFragsM + i) * kFrag;
      const int c = (warp_n * kFragsN + j) * kFrag;
      wmma::store_matrix_sync(cs + r * kLdc + c, acc[i][j], kLdc, wmma::mem_row_major);
    }
  }
  __syncthreads();  // every warp's piece is in cs
  if (epilogue == Epilogue::kSwiGLU) {
    // cs columns 0..31 are the gate sums of outputs o0 .., 32..63 their up sums.
    const int h = n / 2;
    const int o0 = n0 / 2;
    for (int e = static_cast<int>(threadIdx.x); e < kBM * (kBN / 2); e += kThreads) {
      const int r = e / (kBN / 2);
      const int c = e % (kBN / 2);
      if (m0 + r < m && o0 + c < h) {
        y[static_cast<std::int64_t>(m0 + r) * h + o0 + c] =
            from_float<OutT>(silu_mul(cs[r * kLdc + c], cs[r * kLdc + c + kBN / 2]));
      }
    }
    return;
  }
  for (int e = static_cast<int>(threadIdx.x); e < kBM * kBN; e += kThreads) {
    const int r = e / kBN;
    const int c = e % kBN;
    if (m0 + r < m && n0 + c < n) {
      write_out(&y[static_cast<std::int64_t>(m0 + r) * n + n0 + c], cs[r * kLdc + c], epilogue);
    }
  }
}

// v02 (kDoubleBuffer false): load a tile, barrier, multiply, barrier.
// v03 (kDoubleBuffer true): two stages; tile t+1 is copied asynchronously into one while tile t
// is multiplied from the other.
template <bool kDoubleBuffer, typename W, typename T, typename OutT>
__global__ void __launch_bounds__(kThreads)
    gemm_tc_kernel_tiled(W w, const T* __restrict__ x, OutT* __restrict__ y, int m, int n, int k,
                         Epilogue epilogue) {
  T* const stages = aligned_smem<T>();  // (1 or 2, kStage)
  const int warp = static_cast<int>(threadIdx.x) / kWarp;
  const int warp_m = warp / kWarpsN;
  const int warp_n = warp % kWarpsN;
  const int m0 = static_cast<int>(blockIdx.y) * kBM;
  const int n0 = static_cast<int>(blockIdx.x) * kBN;  // kSwiGLU: outputs n0 / 2 .. n0 / 2 + 31
  const int gate_half = epilogue == Epilogue::kSwiGLU ? n / 2 : 0;

  FragAcc acc[kFragsM][kFragsN];
  NS_UNROLL
  for (int i = 0; i < kFragsM; ++i) {
    NS_UNROLL
    for (int j = 0; j < kFragsN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);
  }

  const int tiles = (k + kBK - 1) / kBK;
  if (!kDoubleBuffer) {
    for (int t = 0; t < tiles; ++t) {
      load_tile<false>(stages, x, w, m, n, k, m0, n0, t * kBK, gate_half);
      __syncthreads();  // the stage is complete
      mma_stage(acc, stages, warp_m, warp_n);
      __syncthreads();  // everyone is done with it before the next tile overwrites it
    }
  } else {
    if (tiles > 0) {
      load_tile<true>(stages, x, w, m, n, k, m0, n0, 0, gate_half);
      __pipeline_commit();
    }
    for (int t = 0; t < tiles; ++t) {
      T* const current = stages + (t % 2) * kStage;
      if (t + 1 < tiles) {
        // The other stage was last read in iteration t - 1, which ended at a barrier.
        load_tile<true>(stages + ((t + 1) % 2) * kStage, x, w, m, n, k, m0, n0, (t + 1) * kBK,
                        gate_half);
        __pipeline_commit();
        __pipeline_wait_prior(1);  // tile t's copies have landed; tile t+1's may be in flight
      } else {
        __pipeline_wait_prior(0);
      }
      __syncthreads();  // every thread's copies (and synchronous chunks) of tile t are visible
      mma_stage(acc, current, warp_m, warp_n);
      __syncthreads();  // done with `current` before iteration t + 1 refills it
    }
  }
  // The last iteration ended at a barrier: cs may now overwrite the stages.
  store_tile(acc, y, m, n, m0, n0, warp_m, warp_n, epilogue);
}

// ---------------------------------------------------------------------------------------------
// launchers

void check_args(const char* op, const void* w, const void* x, const void* y, int m, int n,
                int k) {
  const auto fail = [op](const std::string& what) {
    throw std::invalid_argument(std::string(op) + ": " + what);
  };
  if (m < 0) fail("m = " + std::to_string(m) + " must be >= 0");
  if (n < 0) fail("n = " + std::to_string(n) + " must be >= 0");
  if (k < 0) fail("k = " + std::to_string(k) + " must be >= 0");
  if (m == 0 || n == 0) return;
  if (y == nullptr) fail("y is null for a (" + std::to_string(m) + ", " + std::to_string(n) +
                         ") output");
  if (k > 0 && (w == nullptr || x == nullptr)) {
    fail(std::string(w == nullptr ? "w" : "x") + " is null with k = " + std::to_string(k));
  }
}

// Launches `kernel` over chunks of at most 65535 row tiles (the gridDim.y limit).
template <typename W, typename T, typename OutT>
void launch_rows(void (*kernel)(W, const T*, OutT*, int, int, int, Epilogue), int tile_m,
                 int tile_n, int threads, std::size_t smem, const W& w, const T* x, OutT* y,
                 int m, int n, int k, cudaStream_t stream, Epilogue epilogue) {
  const std::int64_t rows_per_launch = static_cast<std::int64_t>(kargs::kMaxGridYZ) * tile_m;
  const int grid_x = (n + tile_n - 1) / tile_n;
  for (std::int64_t r0 = 0; r0 < m; r0 += rows_per_launch) {
    const int rows = static_cast<int>(m - r0 < rows_per_launch ? m - r0 : rows_per_launch);
    launch(kernel, dim3(grid_x, (rows + tile_m - 1) / tile_m), dim3(threads), smem, stream, w,
           x + r0 * k, y + r0 * epilogue_out_features(n, epilogue), rows, n, k, epilogue);
  }
}

// v02 (double_buffer false) or v03 over the W loader `w`.
template <typename T, typename OutT, typename W>
void run_tiled(bool double_buffer, const W& w, const T* x, OutT* y, int m, int n, int k,
               cudaStream_t stream, Epilogue epilogue) {
  const int stages = double_buffer ? 2 : 1;
  const std::size_t tiles_bytes = static_cast<std::size_t>(stages) * kStage * sizeof(T);
  const std::size_t out_bytes = static_cast<std::size_t>(kBM) * kLdc * sizeof(float);
  const std::size_t smem = (tiles_bytes > out_bytes ? tiles_bytes : out_bytes) + kSmemAlign;
  launch_rows<W, T, OutT>(double_buffer ? gemm_tc_kernel_tiled<true, W, T, OutT>
                                        : gemm_tc_kernel_tiled<false, W, T, OutT>,
                          kBM, kBN, kThreads, smem, w, x, y, m, n, k, stream, epilogue);
}

}  // namespace

bool gemm_tc_v01_supports(const void* w, const void* x, int m, int n, int k) {
  const auto aligned32 = [](const void* p) {
    return reinterpret_cast<std::uintptr_t>(p) % 32 == 0;
  };
  return m % kFrag == 0 && n % kFrag == 0 && k % kFrag == 0 && aligned32(w) && aligned32(x);
}

template <typename T, typename OutT>
void launch_gemm_tc(const T* w, const T* x, OutT* y, int m, int n, int k, cudaStream_t stream,
                    Epilogue epilogue, int version) {
  const char* const op = "launch_gemm_tc";
  kargs::run_version<kGemmTcVersions>(op, version, [](auto) {});  // throws for a bad version
  check_epilogue(op, n, epilogue, version >= 2);
  check_args(op, w, x, y, m, n, k);
  if (m == 0 || n == 0) return;
  if (version == 1) {
    if (!gemm_tc_v01_supports(w, x, m, n, k)) {
      throw std::invalid_argument(
          std::string(op) + ": v01 needs m, n, k multiples of 16 and 32-byte aligned w, x (m = " +
          std::to_string(m) + ", n = " + std::to_string(n) + ", k = " + std::to_string(k) +
          "); v02 and later take any size");
    }
    launch_rows<const T*, T, OutT>(gemm_tc_kernel_v01<T, OutT>, kFrag, kFrag * kV01Warps,
                                   kV01Warps * kWarp,
                                   kV01Warps * kFrag * kFrag * sizeof(float) + kSmemAlign, w, x,
                                   y, m, n, k, stream, epilogue);
    return;
  }
  run_tiled<T, OutT>(version == 3, DenseTileW<T>{w}, x, y, m, n, k, stream, epilogue);
}

template <typename T, typename OutT>
void launch_qgemm_tc(const QuantizedWeightView& w, const T* x, OutT* y, int m,
                     cudaStream_t stream, Epilogue epilogue) {
  const char* const op = "launch_qgemm_tc";
  if (w.bits != 4 && w.bits != 8) {
    throw std::invalid_argument(std::string(op) + ": bits = " + std::to_string(w.bits) +
                                " must be 4 or 8");
  }
  if (w.group_size < 1) {
    throw std::invalid_argument(std::string(op) + ": group_size = " +
                                std::to_string(w.group_size) + " must be >= 1");
  }
  check_epilogue(op, w.rows, epilogue, true);
  check_args(op, w.qweight, x, y, m, w.rows, w.cols);
  if (m == 0 || w.rows == 0) return;
  if (w.cols > 0 && w.scales == nullptr)
    throw std::invalid_argument(std::string(op) + ": scales is null");
  run_tiled<T, OutT>(true, QuantTileW<T>{w}, x, y, m, w.rows, w.cols, stream, epilogue);
}

#define NANOSERVE_GEMM_TC_INSTANTIATE(T, OutT)                                               \
  template void launch_gemm_tc<T, OutT>(const T*, const T*, OutT*, int, int, int, cudaStream_t, \
                                        Epilogue, int);                                      \
  template void launch_qgemm_tc<T, OutT>(const QuantizedWeightView&, const T*, OutT*, int,      \
                                         cudaStream_t, Epilogue);
NANOSERVE_GEMM_TC_INSTANTIATE(__half, float)
NANOSERVE_GEMM_TC_INSTANTIATE(__half, __half)
NANOSERVE_GEMM_TC_INSTANTIATE(__nv_bfloat16, float)
NANOSERVE_GEMM_TC_INSTANTIATE(__nv_bfloat16, __nv_bfloat16)
#undef NANOSERVE_GEMM_TC_INSTANTIATE

}  // namespace nanoserve
