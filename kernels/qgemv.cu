// W8A16 / W4A16 GEMV for decode: y_b = dequant(W) x_b for a small batch b of input vectors.
//   W (rows, cols) quantized (kernels/qlinear_common.cuh); x (batch, cols) in activation type A
//   (fp32, fp16, bf16: true W4A16 / W8A16); y (batch, rows) in A or fp32. Dequantized in
//   registers, accumulated in fp32.
//
// The kernels are gemv.cuh's, shared with the dense GEMV (kernels/gemv.cu), so v01–v03 are the
// same ideas as gemv v01–v03: v01 and v02 over the element loader QuantWeights, v03+ the chunk
// loop over QuantChunks (qgemv_chunk.cuh); v04–v06 are what only quantized weights need.
//
// Versions (each adds one idea; `bench_kernels --kernel qgemv`):
//   v01  one thread per output element, looping over the row: reads the code, looks the
//        column's group up (g_idx or c / group_size), loads that group's scale and zero point,
//        dequantizes, multiplies. Neighbouring threads read rows apart: uncoalesced.
//   v02  one warp per row; lane i handles columns i, i+32, …: coalesced, but one byte per lane
//        and load: a warp-wide load is 32 bytes (INT8) or 16 (INT4, two lanes share a byte),
//        far from what HBM needs.
//   v03  the bandwidth design (gemv.cuh's chunk loop, qgemv_chunk.cuh's chunks): each lane
//        loads 16 bytes of codes at once (32 INT4 / 16 INT8 values; a warp-wide load = 512
//        contiguous bytes), 4 such loads in flight per lane, one scale and zero point per chunk
//        instead of per value, 8 rows per 256-thread block, and up to 16 input vectors
//        accumulated in registers so that W is read once per batch. Weights are dequantized to
//        fp32 with shift, mask and I2F.
//   v04  v03 with the exponent trick: a code becomes a float with one LOP3 and one FADD, no
//        I2F. At batch 1 a weight costs one FMA; the I2F (16 per clock per SM in the programming
//        guide's throughput table, vs 128 FMAs) would otherwise be the slowest pipe in the loop.
//   v05  v04 with two rows per warp: each x value a lane loads is used for two rows. At
//        batch 1 a lane reads 4 bytes of x (from L1) per weight — 8 per INT4 weight byte it
//        streams from HBM — so x traffic, not W, can be the limit; two rows halve it.
//   v06  v05 with the scale deferred at batch 1: per chunk, products are summed per code
//        position and each sum is scaled once, so a weight costs LOP3 + FADD + FFMA instead of
//        LOP3 + FADD + FMUL + FFMA. At 4 bits the instruction count per weight, not only the
//        bytes, decides whether the warp schedulers keep up with HBM (see DeferredScaleDequant).
//
// Outside the chunk path's preconditions (act-order, cols not a multiple of a chunk, groups of
// a size that is not a multiple of a chunk, unaligned buffers) v03–v06 run the general path:
// the same chunk loop with one-element chunks (ElementChunks<QuantWeights>), one warp per row.
// An exllama-style fix for act-order (sort the columns by group when loading, permute x to
// match) would put act-order models on the chunk path; it is left as an exercise.
//
// v03–v06 also take Epilogue::kSwiGLU over W = [gate; up] (the chunk loop's, gemv.cuh: with
// two rows per warp, rows j, j+1 of the gate half and then of the up half).
//
// launch_qgemv dispatches to v06. Tests: tests/kernels/test_qgemv.cpp (every version × bits ×
// symmetric/asymmetric × group size × act-order against oracle::matmul on the dequantized W).
#include <cstdint>

#include "kernels/gemv.cuh"
#include "kernels/kernel_args.h"
#include "kernels/qgemv.h"
#include "kernels/qgemv_chunk.cuh"
#include "kernels/qlinear_common.cuh"

namespace nanoserve {
namespace {

using qgemv_detail::ConvertDequant;
using qgemv_detail::ExponentDequant;
using qgemv_detail::QuantChunks;

static_assert(kQGemvMaxBatch == kGemvMaxBatch, "one pass of the shared chunk loop");

// ---------------------------------------------------------------------------------------------
// v01, v02: gemv_kernel_v01 / gemv_kernel_v02 (gemv.cuh) over QuantWeights.
// v03–v06: gemv_chunk_kernel (gemv.cuh) over QuantChunks (qgemv_chunk.cuh).

// ---------------------------------------------------------------------------------------------
// launchers

// One version of v03–v06: the chunk loop with kRows rows per warp and kUnroll chunks in flight
// over QuantChunks<bits, Dequant, kDeferAtBatch1> where the chunk path applies, and over one
// element at a time (one row per warp) otherwise.
template <int kRows, int kUnroll, template <int> class Dequant, bool kDeferAtBatch1 = false,
          typename X, typename Y>
void run_chunked(const QuantizedWeightView& w, const X* x, Y* y, int batch,
                 cudaStream_t stream, Epilogue epilogue) {
  if (!qgemv_detail::chunk_path_applies(w, x)) {
    gemv_detail::launch_gemv_chunks<1, kUnroll>(gemv_detail::ElementChunks<QuantWeights>{{w}}, x,
                                                y, batch, stream, epilogue);
  } else if (w.bits == 4) {
    const QuantChunks<4, Dequant, kDeferAtBatch1> chunks{
        w, w.group_size / qgemv_detail::kChunkValues<4>};
    gemv_detail::launch_gemv_chunks<kRows, kUnroll>(chunks, x, y, batch, stream, epilogue);
  } else {
    const QuantChunks<8, Dequant, kDeferAtBatch1> chunks{
        w, w.group_size / qgemv_detail::kChunkValues<8>};
    gemv_detail::launch_gemv_chunks<kRows, kUnroll>(chunks, x, y, batch, stream, epilogue);
  }
}

template <int kVersion, typename X, typename Y>
void quant_gemv(const char* op, const QuantizedWeightView& w, const X* x, Y* y,
                int batch, cudaStream_t stream, Epilogue epilogue) {
  check_epilogue(op, w.rows, epilogue, kVersion >= 3);
  if (check_quant_linear_args(op, w, x, y, batch, sizeof(X), sizeof(Y))) return;
  if constexpr (kVersion <= 2) {
    gemv_detail::launch_gemv_elementwise<kVersion>(QuantWeights{w}, x, y, batch, stream,
                                                   epilogue);
  } else if constexpr (kVersion == 3) {
    run_chunked<1, 4, ConvertDequant>(w, x, y, batch, stream, epilogue);
  } else if constexpr (kVersion == 4) {
    run_chunked<1, 4, ExponentDequant>(w, x, y, batch, stream, epilogue);
  } else if constexpr (kVersion == 5) {
    // 2 rows x 4 chunks = 8 loads in flight per lane: half as many warps as v04, each with
    // twice the loads, keeps the bytes in flight per SM (what HBM needs) where v04 had them.
    // 4 rows per warp would quarter the x reads but leave a 4096-row layer 128 blocks, one per
    // SM, at high register use; a GPU sweep of rows per warp should settle it.
    run_chunked<2, 4, ExponentDequant>(w, x, y, batch, stream, epilogue);
  } else {
    run_chunked<2, 4, ExponentDequant, true>(w, x, y, batch, stream, epilogue);
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// dispatch (launch_qgemv is v06)

NANOSERVE_QUANT_LINEAR_LAUNCHER(launch_qgemv_v01, quant_gemv, 1,
                                NANOSERVE_QUANT_LINEAR_INSTANTIATE_FP32)
NANOSERVE_QUANT_LINEAR_LAUNCHER(launch_qgemv_v02, quant_gemv, 2,
                                NANOSERVE_QUANT_LINEAR_INSTANTIATE_FP32)
NANOSERVE_QUANT_LINEAR_LAUNCHER(launch_qgemv_v03, quant_gemv, 3,
                                NANOSERVE_QUANT_LINEAR_INSTANTIATE_FP32)
NANOSERVE_QUANT_LINEAR_LAUNCHER(launch_qgemv_v04, quant_gemv, 4,
                                NANOSERVE_QUANT_LINEAR_INSTANTIATE_FP32)
NANOSERVE_QUANT_LINEAR_LAUNCHER(launch_qgemv_v05, quant_gemv, 5,
                                NANOSERVE_QUANT_LINEAR_INSTANTIATE_FP32)
NANOSERVE_QUANT_LINEAR_LAUNCHER(launch_qgemv_v06, quant_gemv, 6,
                                NANOSERVE_QUANT_LINEAR_INSTANTIATE_FP32)
NANOSERVE_QUANT_LINEAR_LAUNCHER(launch_qgemv, quant_gemv, 6,
                                NANOSERVE_QUANT_LINEAR_INSTANTIATE)
NANOSERVE_QUANT_LINEAR_VERSION_LAUNCHER(launch_qgemv_version, quant_gemv, kQGemvVersions)

}  // namespace nanoserve
