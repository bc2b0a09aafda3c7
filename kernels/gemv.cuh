#pragma once
/// \file
/// \brief The GEMV kernels of both members of the family, `y_b = W x_b` for a small batch b:
/// dense W (kernels/gemv.cu) and weight-only quantized W (kernels/qgemv.cu). Each is written
/// once over a loader, so version N is the same idea in both:
///
/// | version | kernel | loader |
/// |---|---|---|
/// | v01 | `gemv_kernel_v01`: one thread per output element | element: DenseWeights, QuantWeights |
/// | v02 | `gemv_kernel_v02`: one warp per row, coalesced, shuffle reduction | element loader |
/// | v03+ | `gemv_chunk_kernel`: the chunk loop (below) | chunk loader |
///
/// The chunk loop is the bandwidth design: one warp per row (or `kRows` rows), 8 warps per
/// 256-thread block, lane l takes chunks l, l + 32, … of its rows, `kUnroll` chunks' loads are
/// issued before the first is used (bytes in flight per lane: bandwidth = bytes in flight /
/// latency), and up to kGemvMaxBatch input vectors are accumulated in registers so that W is
/// read once per pass. What a chunk is belongs to the loader:
///
/// - `ElementChunks<W>`: one element of an element loader (the general path: any shape);
/// - `VectorChunks<T>` (gemv.cu): 16 bytes of dense weights, 4 fp32 or 8 fp16/bf16;
/// - `QuantChunks` (qgemv_chunk.cuh): 16 bytes of packed codes (32 INT4 / 16 INT8 values) with
///   one scale and zero point per chunk, dequantized in registers by a policy.
///
/// A chunk loader has public `rows` and `cols` (the stride of x), `chunks()` per row, and
/// `accumulate<kBatch, kRows, kCount>(row_of, x, batch, c, acc)`: `acc[r][b] += W[row_of[r],
/// chunks c, c + 32, …] · x_b[same columns]` for kCount chunks, all loads issued first, for x
/// in any activation storage type X (widened to fp32 as it is loaded).

#include <cstdint>

#include "kernels/cuda_compat.h"
#include "kernels/gemv.h"
#include "kernels/kernel_args.h"
#include "kernels/linear_common.cuh"
#include "kernels/reduce.cuh"

namespace nanoserve::gemv_detail {

/// \brief Threads per warp.
constexpr int kWarp = 32;
/// \brief Warps per block of the chunk loop (256 threads: a 32-thread block would cap an SM at
/// half its warps, and 8 warps reading 8 rows keep the loads of a block close together).
constexpr int kWarpsPerBlock = 8;

/// \brief v01: one thread per output element y[b][row], looping over the row. Neighbouring
/// threads read addresses a row apart, so every load is its own memory transaction.
/// x (batch, cols) in X, y (batch, rows) in Y; grid (ceil(rows / 256), batch), block 256.
template <typename W, typename X, typename Y>
__global__ void gemv_kernel_v01(W w, const X* __restrict__ x, Y* __restrict__ y,
                                Epilogue epilogue) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  const int b = blockIdx.y;
  if (row >= w.rows) return;
  const X* x_b = x + static_cast<std::int64_t>(b) * w.cols;  // (cols)
  float acc = 0.0f;
  for (int k = 0; k < w.cols; ++k) acc += w.at(row, k) * to_float(x_b[k]);
  apply_epilogue(&y[static_cast<std::int64_t>(b) * w.rows + row], acc, epilogue);
}

/// \brief v02: one warp per row: lane i reads elements i, i + 32, … so a warp's loads are
/// contiguous (coalesced); the 32 partial sums meet in a `__shfl_xor_sync` butterfly.
/// x (batch, cols), y (batch, rows); grid (rows, batch), block 32.
template <typename W, typename X, typename Y>
__global__ void gemv_kernel_v02(W w, const X* __restrict__ x, Y* __restrict__ y,
                                Epilogue epilogue) {
  const int row = blockIdx.x;
  const int b = blockIdx.y;
  const int lane = threadIdx.x;
  const X* x_b = x + static_cast<std::int64_t>(b) * w.cols;  // (cols)
  float acc = 0.0f;
  for (int k = lane; k < w.cols; k += kWarp) acc += w.at(row, k) * to_float(x_b[k]);
  acc = warp_sum(acc);
  if (lane == 0) apply_epilogue(&y[static_cast<std::int64_t>(b) * w.rows + row], acc, epilogue);
}

/// \brief Launches v01 (`kVersion` 1) or v02 (2) over element loader `w` for `batch` vectors,
/// in grids of at most 65535 vectors (the gridDim.y limit). Neither has a SwiGLU epilogue
/// (std::invalid_argument).
template <int kVersion, typename W, typename X, typename Y>
void launch_gemv_elementwise(const W& w, const X* x, Y* y, int batch,
                             cudaStream_t stream, Epilogue epilogue) {
  check_epilogue(kVersion == 1 ? "gemv v01" : "gemv v02", w.rows, epilogue, false);
  constexpr int kV01Block = 256;
  for (int b0 = 0; b0 < batch; b0 += kargs::kMaxGridYZ) {
    const int nb = batch - b0 < kargs::kMaxGridYZ ? batch - b0 : kargs::kMaxGridYZ;
    const X* xb = x + static_cast<std::int64_t>(b0) * w.cols;  // (nb, cols)
    Y* yb = y + static_cast<std::int64_t>(b0) * w.rows;        // (nb, rows)
    if constexpr (kVersion == 1) {
      launch(gemv_kernel_v01<W, X, Y>, dim3(kargs::blocks_for(w.rows, kV01Block), nb),
             dim3(kV01Block), 0, stream, w, xb, yb, epilogue);
    } else {
      launch(gemv_kernel_v02<W, X, Y>, dim3(w.rows, nb), dim3(kWarp), 0, stream, w, xb, yb,
             epilogue);
    }
  }
}

/// \brief The chunk loop (v03+): warp v of block blk computes the kRows rows from
/// `(blk · 8 + v) · kRows` on, for `batch <= kBatch` vectors. x (batch, cols), y (batch, rows);
/// grid (ceil(rows / (8 · kRows))), block 256.
///
/// Epilogue::kSwiGLU (W = [gate; up], 2h rows; y (batch, h)): the warp's rows are output rows j
/// of the h; the loop runs twice, over gate rows j (part 0) and up rows h + j (part 1), so each
/// weight is still read once and each row sums in the same order as without the fusion. The
/// gate sums wait in one register per lane (lane r · kBatch + b holds that of row r, vector b)
/// and reach lane 0 by a shuffle: no shared memory.
template <typename Chunks, int kBatch, int kRows, int kUnroll, typename X, typename Y>
__global__ void __launch_bounds__(kWarpsPerBlock* kWarp)
    gemv_chunk_kernel(Chunks w, const X* __restrict__ x, Y* __restrict__ y, int batch,
                      Epilogue epilogue) {
  static_assert(kRows * kBatch <= kWarp, "one lane per gate sum of the SwiGLU epilogue");
  const bool swiglu = epilogue == Epilogue::kSwiGLU;
  const int out_rows = epilogue_out_features(w.rows, epilogue);  // rows of y
  const int lane = threadIdx.x % kWarp;
  const int row0 = (blockIdx.x * kWarpsPerBlock + threadIdx.x / kWarp) * kRows;
  if (row0 >= out_rows) return;  // the whole warp leaves together: its shuffles stay full-mask
  float acc[kRows][kBatch];
  float gate_of_lane = 0.0f;  // kSwiGLU: the gate sum of (row lane / kBatch, vector lane % kBatch)
  const int parts = swiglu ? 2 : 1;
  for (int part = 0; part < parts; ++part) {
    int row_of[kRows];
    NS_UNROLL
    for (int r = 0; r < kRows; ++r) {
      // A warp past the last row re-reads that row (branch-free); its sums are never stored.
      row_of[r] = part * out_rows + (row0 + r < out_rows ? row0 + r : out_rows - 1);
    }
    NS_UNROLL
    for (int r = 0; r < kRows; ++r) {
      NS_UNROLL
      for (int b = 0; b < kBatch; ++b) acc[r][b] = 0.0f;
    }
    const int chunks = w.chunks();
    int c = lane;
    for (; c + (kUnroll - 1) * kWarp < chunks; c += kUnroll * kWarp) {
      w.template accumulate<kBatch, kRows, kUnroll>(row_of, x, batch, c, acc);
    }
    for (; c < chunks; c += kWarp) {  // tail: fewer than kUnroll chunks left for this lane
      w.template accumulate<kBatch, kRows, 1>(row_of, x, batch, c, acc);
    }
    if (part + 1 < parts) {  // kSwiGLU, gate half done: keep its sums for the epilogue
      NS_UNROLL
      for (int r = 0; r < kRows; ++r) {
        NS_UNROLL
        for (int b = 0; b < kBatch; ++b) {
          if (b < batch) {  // same on every lane: not divergent
            const float sum = warp_sum(acc[r][b]);
            if (lane == r * kBatch + b) gate_of_lane = sum;
          }
        }
      }
    }
  }
  NS_UNROLL
  for (int r = 0; r < kRows; ++r) {
    NS_UNROLL
    for (int b = 0; b < kBatch; ++b) {
      if (b < batch) {  // same on every lane: not divergent
        const float sum = warp_sum(acc[r][b]);
        const float gate = swiglu ? __shfl_sync(0xffffffffu, gate_of_lane, r * kBatch + b) : 0.0f;
        if (lane == 0 && row0 + r < out_rows) {
          Y* out = &y[static_cast<std::int64_t>(b) * out_rows + row0 + r];
          if (swiglu) {
            *out = from_float<Y>(silu_mul(gate, sum));
          } else {
            apply_epilogue(out, sum, epilogue);
          }
        }
      }
    }
  }
}

/// \brief Runs the chunk loop over `w` for any batch and epilogue (kSwiGLU: y has w.rows / 2
/// columns; the caller checked that w.rows is even): passes of at most kGemvMaxBatch vectors
/// (each reading W again), each launched for the smallest batch tier (1, 4, 16) that holds it
/// — the accumulators live in registers, so their count is a compile-time constant, and a
/// kernel sized for 16 vectors would waste registers (occupancy) at batch 1.
template <int kRows, int kUnroll, typename Chunks, typename X, typename Y>
void launch_gemv_chunks(const Chunks& w, const X* x, Y* y, int batch,
                        cudaStream_t stream, Epilogue epilogue) {
  const dim3 grid(
      kargs::blocks_for(epilogue_out_features(w.rows, epilogue), kWarpsPerBlock * kRows));
  const dim3 block(kWarpsPerBlock * kWarp);
  for (int b0 = 0; b0 < batch; b0 += kGemvMaxBatch) {
    const int nb = batch - b0 < kGemvMaxBatch ? batch - b0 : kGemvMaxBatch;
    const X* xb = x + static_cast<std::int64_t>(b0) * w.cols;                      // (nb, cols)
    Y* yb = y + static_cast<std::int64_t>(b0) * epilogue_out_features(w.rows, epilogue);
    if (nb <= 1) {
      launch(gemv_chunk_kernel<Chunks, 1, kRows, kUnroll, X, Y>, grid, block, 0, stream,
             w, xb, yb, nb, epilogue);
    } else if (nb <= 4) {
      launch(gemv_chunk_kernel<Chunks, 4, kRows, kUnroll, X, Y>, grid, block, 0, stream,
             w, xb, yb, nb, epilogue);
    } else {
      launch(gemv_chunk_kernel<Chunks, kGemvMaxBatch, kRows, kUnroll, X, Y>, grid, block, 0,
             stream, w, xb, yb, nb, epilogue);
    }
  }
}

/// \brief The chunk loader of the general path: a chunk is one element of element loader W
/// (DenseWeights or QuantWeights), so any shape, alignment and act-order works, only slower.
template <typename W>
struct ElementChunks : W {
  /// \brief Chunks per row: one per column.
  __device__ __forceinline__ int chunks() const { return this->cols; }
  /// \brief See the file comment: kCount elements per row, loaded (dequantized) first.
  template <int kBatch, int kRows, int kCount, typename X>
  __device__ __forceinline__ void accumulate(const int (&row_of)[kRows],
                                             const X* __restrict__ x, int batch, int c,
                                             float (&acc)[kRows][kBatch]) const {
    float wv[kCount][kRows];
    NS_UNROLL
    for (int u = 0; u < kCount; ++u) {
      NS_UNROLL
      for (int r = 0; r < kRows; ++r) wv[u][r] = this->at(row_of[r], c + u * kWarp);
    }
    NS_UNROLL
    for (int u = 0; u < kCount; ++u) {
      NS_UNROLL
      for (int b = 0; b < kBatch; ++b) {
        if (b < batch) {  // uniform across the warp
          const float xv = to_float(x[static_cast<std::int64_t>(b) * this->cols + c + u * kWarp]);
          NS_UNROLL
          for (int r = 0; r < kRows; ++r) acc[r][b] += wv[u][r] * xv;
        }
      }
    }
  }
};

}  // namespace nanoserve::gemv_detail
