// W8A16 / W4A16 GEMV for decode: y_b = dequant(W) x_b for a small batch b of input vectors.
//   W (rows, cols) quantized (kernels/qlinear_common.cuh); x (batch, cols) fp32; y (batch, rows)
//   fp32. Dequantized in registers, accumulated in fp32.
//
// Versions (each adds one idea; `bench_kernels --kernel qgemv`):
//   v01  one warp (a 32-thread block) per row; lane i handles columns i, i+32, …: reads the code
//        byte, looks the column's group up (g_idx or c / group_size), loads that group's scale
//        and zero point, dequantizes, multiplies. One byte per lane and load: a warp-wide load
//        is 32 bytes (INT8) or 16 (INT4, two lanes share a byte), far from what HBM needs.
//   v02  the bandwidth design (see qgemv_chunk.cuh): each lane loads 16 bytes of codes at once
//        (32 INT4 / 16 INT8 values; a warp-wide load = 512 contiguous bytes), 4 such loads in
//        flight per lane, one scale and zero point per chunk instead of per value, 8 rows per
//        256-thread block, and up to 16 input vectors accumulated in registers so that W is
//        read once per batch. Weights are dequantized to fp32 with shift, mask and I2F.
//   v03  v02 with the exponent trick: a code becomes a float with one LOP3 and one FADD, no
//        I2F. At batch 1 a weight costs one FMA; the I2F (16 per clock per SM in the programming
//        guide's throughput table, vs 128 FMAs) would otherwise be the slowest pipe in the loop.
//   v04  v03 with two rows per warp: each x value a lane loads is used for two rows. At
//        batch 1 a lane reads 4 bytes of x (from L1) per weight — 8 per INT4 weight byte it
//        streams from HBM — so x traffic, not W, can be the limit; two rows halve it.
//   v05  v04 with the scale deferred at batch 1: per chunk, products are summed per code
//        position and each sum is scaled once, so a weight costs LOP3 + FADD + FFMA instead of
//        LOP3 + FADD + FMUL + FFMA. At 4 bits the instruction count per weight, not only the
//        bytes, decides whether the warp schedulers keep up with HBM (see DeferredScaleDequant).
//
// Outside the chunk path's preconditions (act-order, cols not a multiple of a chunk, groups of
// a size that is not a multiple of a chunk, unaligned buffers) v02–v05 run the general path:
// v02's block shape and batch registers, one element at a time via dequantize_element. An
// exllama-style fix for act-order (sort the columns by group when loading, permute x to match)
// would put act-order models on the chunk path; it is left as an exercise.
//
// launch_qgemv dispatches to v05. Tests: tests/kernels/test_qgemv.cpp (every version × bits ×
// symmetric/asymmetric × group size × act-order against oracle::matmul on the dequantized W).
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "kernels/qgemv.h"
#include "kernels/qgemv_chunk.cuh"

namespace nanoserve {
namespace {

using qgemv_detail::ConvertDequant;
using qgemv_detail::ExponentDequant;
using qgemv_detail::kWarp;
using qgemv_detail::kWarpsPerBlock;
using qgemv_detail::warp_sum;

constexpr int kMaxGridY = 65535;

// ---------------------------------------------------------------------------------------------
// v01: one warp per row. grid (rows, batch), block 32.

__global__ void qgemv_kernel_v01(QuantizedWeightView w, const float* __restrict__ x,
                                 float* __restrict__ y, Epilogue epilogue) {
  const int row = blockIdx.x;
  const int b = blockIdx.y;
  const int lane = threadIdx.x;
  const float* x_b = x + static_cast<std::int64_t>(b) * w.cols;  // (cols)
  float acc = 0.0f;
  for (int c = lane; c < w.cols; c += kWarp) acc += dequantize_element(w, row, c) * x_b[c];
  acc = warp_sum(acc);
  if (lane == 0) apply_epilogue(&y[static_cast<std::int64_t>(b) * w.rows + row], acc, epilogue);
}

// ---------------------------------------------------------------------------------------------
// The chunk path of v02–v05 (helpers and layout: qgemv_chunk.cuh). grid (ceil(rows / (8·kRows))),
// block 256.

using qgemv_detail::accumulate_chunks;
using qgemv_detail::kChunkValues;
using qgemv_detail::WarpRows;

// The chunk-path GEMV: warp `v` of block `blk` computes rows
// `(blk · kWarpsPerBlock + v) · kRows …  + kRows − 1` for `batch <= kBatch` input vectors.
// Requires `chunk_path_applies(w, x)` (the launcher's job).
//   kBits   4 or 8
//   kBatch  accumulators per row (the batch tier: 1, 4 or 16)
//   kRows   rows per warp (v02, v03: 1; v04, v05: 2)
//   kUnroll chunks per lane whose loads are issued together
//   Dequant ConvertDequant<kBits> (v02), ExponentDequant<kBits> (v03, v04, v05 at batch > 1)
//           or DeferredScaleDequant<kBits> (v05 at batch 1)
template <int kBits, int kBatch, int kRows, int kUnroll, typename Dequant>
__global__ void __launch_bounds__(kWarpsPerBlock* kWarp)
    qgemv_chunk_kernel(QuantizedWeightView w, const float* __restrict__ x,
                       float* __restrict__ y, int batch, Epilogue epilogue) {
  const int lane = threadIdx.x % kWarp;
  const int row0 = (blockIdx.x * kWarpsPerBlock + threadIdx.x / kWarp) * kRows;
  if (row0 >= w.rows) return;  // the whole warp leaves together: its shuffles stay full-mask

  const std::int64_t row_bytes = w.row_bytes();
  const int chunks = static_cast<int>(row_bytes / 16);
  const int chunks_per_group = w.group_size / kChunkValues<kBits>;
  WarpRows<kRows> rows;
  NS_UNROLL
  for (int r = 0; r < kRows; ++r) {
    // A warp past the last row re-reads that row (branch-free); its sums are never stored.
    const int row = row0 + r < w.rows ? row0 + r : w.rows - 1;
    rows.codes[r] = w.qweight + row * row_bytes;
    rows.params[r] = static_cast<std::int64_t>(row) * w.groups();
  }

  float acc[kRows][kBatch];
  NS_UNROLL
  for (int r = 0; r < kRows; ++r) {
    NS_UNROLL
    for (int b = 0; b < kBatch; ++b) acc[r][b] = 0.0f;
  }
  int c = lane;
  for (; c + (kUnroll - 1) * kWarp < chunks; c += kUnroll * kWarp) {
    accumulate_chunks<kBits, kBatch, kRows, kUnroll, Dequant>(w, rows, x, batch, c,
                                                              chunks_per_group, acc);
  }
  for (; c < chunks; c += kWarp) {  // tail: fewer than kUnroll chunks left for this lane
    accumulate_chunks<kBits, kBatch, kRows, 1, Dequant>(w, rows, x, batch, c, chunks_per_group,
                                                        acc);
  }

  NS_UNROLL
  for (int r = 0; r < kRows; ++r) {
    NS_UNROLL
    for (int b = 0; b < kBatch; ++b) {
      if (b < batch) {  // same on every lane: not divergent
        const float sum = warp_sum(acc[r][b]);
        if (lane == 0 && row0 + r < w.rows) {
          apply_epilogue(&y[static_cast<std::int64_t>(b) * w.rows + row0 + r], sum, epilogue);
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The general path of v02–v05: one warp per row, 8 rows per block, kBatch accumulators per lane,
// one element per lane and step. grid (ceil(rows / 8)), block 256.

template <int kBatch>
__global__ void __launch_bounds__(kWarpsPerBlock* kWarp)
    qgemv_general_kernel(QuantizedWeightView w, const float* __restrict__ x,
                         float* __restrict__ y, int batch, Epilogue epilogue) {
  const int lane = threadIdx.x % kWarp;
  const int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / kWarp;
  if (row >= w.rows) return;  // the whole warp leaves together
  float acc[kBatch];
  NS_UNROLL
  for (int b = 0; b < kBatch; ++b) acc[b] = 0.0f;
  for (int c = lane; c < w.cols; c += kWarp) {
    const float wv = dequantize_element(w, row, c);
    NS_UNROLL
    for (int b = 0; b < kBatch; ++b) {
      if (b < batch) acc[b] += wv * x[static_cast<std::int64_t>(b) * w.cols + c];
    }
  }
  NS_UNROLL
  for (int b = 0; b < kBatch; ++b) {
    if (b < batch) {  // same on every lane: not divergent
      const float sum = warp_sum(acc[b]);
      if (lane == 0) apply_epilogue(&y[static_cast<std::int64_t>(b) * w.rows + row], sum, epilogue);
    }
  }
}

// Launches `kernel<kBatch>` for the smallest batch tier (1, 4, 16) that holds `batch`: the
// accumulators live in registers, so their count is a compile-time constant, and a kernel
// sized for 16 vectors would waste registers (occupancy) at batch 1.
template <template <int> class Kernel>
void launch_batch_tier(dim3 grid, const QuantizedWeightView& w, const float* x, float* y,
                       int batch, cudaStream_t stream, Epilogue epilogue) {
  const dim3 block(kWarpsPerBlock * kWarp);
  if (batch <= 1) {
    launch(Kernel<1>::kernel(), grid, block, 0, stream, w, x, y, batch, epilogue);
  } else if (batch <= 4) {
    launch(Kernel<4>::kernel(), grid, block, 0, stream, w, x, y, batch, epilogue);
  } else {
    launch(Kernel<kQGemvMaxBatch>::kernel(), grid, block, 0, stream, w, x, y, batch, epilogue);
  }
}

template <int kBatch>
struct GeneralKernel {
  static auto kernel() { return &qgemv_general_kernel<kBatch>; }
};

// The chunk kernel of one version, by batch tier; kDeferAtBatch1 selects v05's
// DeferredScaleDequant for the batch-1 tier.
template <int kBits, int kRows, int kUnroll, template <int> class Dequant, bool kDeferAtBatch1>
struct ChunkKernel {
  template <int kBatch>
  struct Tier {
    using Policy = std::conditional_t<kDeferAtBatch1 && kBatch == 1,
                                      qgemv_detail::DeferredScaleDequant<kBits>, Dequant<kBits>>;
    static auto kernel() { return &qgemv_chunk_kernel<kBits, kBatch, kRows, kUnroll, Policy>; }
  };
};

// One version of v02–v05: validates, then runs passes of at most kQGemvMaxBatch vectors, each on
// the chunk path when it applies and on the general path otherwise.
template <int kRows, int kUnroll, template <int> class Dequant, bool kDeferAtBatch1 = false>
void launch_chunked_version(const char* op, const QuantizedWeightView& w, const float* x,
                            float* y, int batch, cudaStream_t stream, Epilogue epilogue) {
  if (check_quant_linear_args(op, w, x, y, batch)) return;
  const bool chunked = qgemv_detail::chunk_path_applies(w, x);
  const int rows_per_block = chunked ? kWarpsPerBlock * kRows : kWarpsPerBlock;
  const dim3 grid((w.rows + rows_per_block - 1) / rows_per_block);
  for (int b0 = 0; b0 < batch; b0 += kQGemvMaxBatch) {
    const int nb = batch - b0 < kQGemvMaxBatch ? batch - b0 : kQGemvMaxBatch;
    const float* xb = x + static_cast<std::int64_t>(b0) * w.cols;  // (nb, cols)
    float* yb = y + static_cast<std::int64_t>(b0) * w.rows;        // (nb, rows)
    if (!chunked) {
      launch_batch_tier<GeneralKernel>(grid, w, xb, yb, nb, stream, epilogue);
    } else if (w.bits == 4) {
      launch_batch_tier<ChunkKernel<4, kRows, kUnroll, Dequant, kDeferAtBatch1>::template Tier>(
          grid, w, xb, yb, nb, stream, epilogue);
    } else {
      launch_batch_tier<ChunkKernel<8, kRows, kUnroll, Dequant, kDeferAtBatch1>::template Tier>(
          grid, w, xb, yb, nb, stream, epilogue);
    }
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// launchers

void launch_qgemv_v01(const QuantizedWeightView& w, const float* x, float* y, int batch,
                      cudaStream_t stream, Epilogue epilogue) {
  if (check_quant_linear_args("launch_qgemv_v01", w, x, y, batch)) return;
  for (int b0 = 0; b0 < batch; b0 += kMaxGridY) {  // gridDim.y is limited to 65535
    const int nb = batch - b0 < kMaxGridY ? batch - b0 : kMaxGridY;
    launch(qgemv_kernel_v01, dim3(w.rows, nb), dim3(kWarp), 0, stream, w,
           x + static_cast<std::int64_t>(b0) * w.cols,
           y + static_cast<std::int64_t>(b0) * w.rows, epilogue);
  }
}

void launch_qgemv_v02(const QuantizedWeightView& w, const float* x, float* y, int batch,
                      cudaStream_t stream, Epilogue epilogue) {
  launch_chunked_version<1, 4, ConvertDequant>("launch_qgemv_v02", w, x, y, batch, stream,
                                               epilogue);
}

void launch_qgemv_v03(const QuantizedWeightView& w, const float* x, float* y, int batch,
                      cudaStream_t stream, Epilogue epilogue) {
  launch_chunked_version<1, 4, ExponentDequant>("launch_qgemv_v03", w, x, y, batch, stream,
                                                epilogue);
}

void launch_qgemv_v04(const QuantizedWeightView& w, const float* x, float* y, int batch,
                      cudaStream_t stream, Epilogue epilogue) {
  // 2 rows x 4 chunks = 8 loads in flight per lane: half as many warps as v03, each with twice
  // the loads, keeps the bytes in flight per SM (what HBM needs) where v03 had them. 4 rows per
  // warp would quarter the x reads but leave a 4096-row layer 128 blocks, one per SM, at high
  // register use; a GPU sweep of rows per warp should settle it.
  launch_chunked_version<2, 4, ExponentDequant>("launch_qgemv_v04", w, x, y, batch, stream,
                                                epilogue);
}

void launch_qgemv_v05(const QuantizedWeightView& w, const float* x, float* y, int batch,
                      cudaStream_t stream, Epilogue epilogue) {
  launch_chunked_version<2, 4, ExponentDequant, true>("launch_qgemv_v05", w, x, y, batch, stream,
                                                      epilogue);
}

void launch_qgemv_version(int version, const QuantizedWeightView& w, const float* x, float* y,
                          int batch, cudaStream_t stream, Epilogue epilogue) {
  switch (version) {
    case 1: return launch_qgemv_v01(w, x, y, batch, stream, epilogue);
    case 2: return launch_qgemv_v02(w, x, y, batch, stream, epilogue);
    case 3: return launch_qgemv_v03(w, x, y, batch, stream, epilogue);
    case 4: return launch_qgemv_v04(w, x, y, batch, stream, epilogue);
    case 5: return launch_qgemv_v05(w, x, y, batch, stream, epilogue);
    default:
      throw std::invalid_argument("launch_qgemv_version: version " + std::to_string(version) +
                                  " does not exist (1.." + std::to_string(kQGemvVersions) + ")");
  }
}

void launch_qgemv(const QuantizedWeightView& w, const float* x, float* y, int batch,
                  cudaStream_t stream, Epilogue epilogue) {
  launch_qgemv_v05(w, x, y, batch, stream, epilogue);
}

}  // namespace nanoserve
