#pragma once
/// \file
/// \brief W8A16 / W4A16 GEMV for decode: `y_b = dequant(W) x_b` for a small batch of input
/// vectors, W weight-only quantized (INT8 or INT4 codes, per-group fp16 scales and optional
/// zero points, optional act-order g_idx; layout: kernels/qlinear_common.cuh), dequantized on
/// the fly in registers, fp32 accumulation.
///
/// Decode reads every weight once per step, so its time is weight bytes / bandwidth: INT4
/// codes are a quarter of the fp16 bytes (plus 2–4 bytes of scale and zero point per group), and
/// the point of these kernels is to turn that into a ~4× faster GEMV. The versions
/// (kernels/qgemv.cu) are the steps; the kernels are the dense GEMV's (kernels/gemv.cuh) over
/// a dequantizing loader, so v01–v03 are the same ideas as gemv v01–v03:
///
/// | version | idea it adds |
/// |---|---|
/// | v01 | one thread per output element, group looked up per element (uncoalesced baseline) |
/// | v02 | one warp per row: coalesced code loads, `__shfl_xor_sync` reduction |
/// | v03 | 16-byte code loads (32 INT4 / 16 INT8 values), 4 in flight per lane, scale and zero once per load, 8 rows per block, batch ≤ 16 in registers |
/// | v04 | dequantization without int→float conversions (the exponent trick: one LOP3 and one FADD per value) |
/// | v05 | two rows per warp: every x value loaded feeds two rows (halves the activation reads) |
/// | v06 | at batch 1, the scale applied once per chunk to per-position sums (3 instructions per weight instead of 4) |
///
/// v03–v06 change the *fast path*: no g_idx, rows of whole 16-byte chunks (cols a multiple of
/// 32 for INT4, 16 for INT8), a group size that is a multiple of a chunk, 16-byte aligned
/// qweight and x. Anything else — act-order, odd widths like 172, groups of 48 — runs the
/// general path (the same chunk loop, one element at a time, group looked up per element):
/// correct for every shape, only slower.
///
/// v03–v06 also take `Epilogue::kSwiGLU` (W = [gate; up], y with rows / 2 columns: the fused
/// gate+up projection of chapter 5's models); v01 and v02 throw std::invalid_argument.
///
/// The numbered versions and launch_qgemv_version are built for fp32 activations (A = O =
/// float); launch_qgemv for every activation type A (true W4A16 / W8A16 with fp16/bf16) and
/// output O = A or fp32.
///
/// Every launcher throws std::invalid_argument for a bad view or buffer
/// (`check_quant_linear_args`).

#include "kernels/cuda_compat.h"
#include "kernels/dtype.cuh"
#include "kernels/linear_common.cuh"
#include "kernels/qlinear_common.cuh"

namespace nanoserve {

/// \brief Number of quantized GEMV versions (`launch_qgemv_version` accepts 1..kQGemvVersions).
inline constexpr int kQGemvVersions = 6;

/// \brief Largest batch that v03–v06 serve in one pass over W; larger batches are split into
/// passes of this size, each reading W again.
inline constexpr int kQGemvMaxBatch = 16;

/// \brief v01: one thread per output element (the baseline).
/// \param w        quantized weights W (rows, cols), see QuantizedWeightView
/// \param x        (batch, cols) device inputs in activation type A (fp32, fp16, bf16)
/// \param y        (batch, rows) device outputs in O (A, or fp32); must not alias x or W's arrays
/// \param batch    number of input vectors (0 launches nothing)
/// \param stream   CUDA stream
/// \param epilogue store (y = W x) or accumulate (y += W x, the fused residual add)
template <typename A = float, typename O = A>
void launch_qgemv_v01(const QuantizedWeightView& w, const nondeduced_t<A>* x, nondeduced_t<O>* y,
                      int batch,
                      cudaStream_t stream, Epilogue epilogue = Epilogue::kStore);

/// \brief v02: one warp per row, one element per lane and step. Parameters as
/// launch_qgemv_v01.
template <typename A = float, typename O = A>
void launch_qgemv_v02(const QuantizedWeightView& w, const nondeduced_t<A>* x, nondeduced_t<O>* y,
                      int batch,
                      cudaStream_t stream, Epilogue epilogue = Epilogue::kStore);

/// \brief v03: 16-byte code loads, per-load scale, 8 rows per block, batch in registers.
/// Parameters as launch_qgemv_v01.
template <typename A = float, typename O = A>
void launch_qgemv_v03(const QuantizedWeightView& w, const nondeduced_t<A>* x, nondeduced_t<O>* y,
                      int batch,
                      cudaStream_t stream, Epilogue epilogue = Epilogue::kStore);

/// \brief v04: v03 with exponent-trick dequantization. Parameters as launch_qgemv_v01.
template <typename A = float, typename O = A>
void launch_qgemv_v04(const QuantizedWeightView& w, const nondeduced_t<A>* x, nondeduced_t<O>* y,
                      int batch,
                      cudaStream_t stream, Epilogue epilogue = Epilogue::kStore);

/// \brief v05: v04 with two rows per warp. Parameters as launch_qgemv_v01.
template <typename A = float, typename O = A>
void launch_qgemv_v05(const QuantizedWeightView& w, const nondeduced_t<A>* x, nondeduced_t<O>* y,
                      int batch,
                      cudaStream_t stream, Epilogue epilogue = Epilogue::kStore);

/// \brief v06: v05 with the scale deferred to once per chunk at batch 1. Parameters as
/// launch_qgemv_v01.
template <typename A = float, typename O = A>
void launch_qgemv_v06(const QuantizedWeightView& w, const nondeduced_t<A>* x, nondeduced_t<O>* y,
                      int batch,
                      cudaStream_t stream, Epilogue epilogue = Epilogue::kStore);

/// \brief Runs version `version` (1..kQGemvVersions; anything else throws
/// std::invalid_argument). Parameters as launch_qgemv_v01.
template <typename A = float, typename O = A>
void launch_qgemv_version(int version, const QuantizedWeightView& w, const nondeduced_t<A>* x,
                          nondeduced_t<O>* y,
                          int batch, cudaStream_t stream, Epilogue epilogue = Epilogue::kStore);

/// \brief The best quantized GEMV version (v06). Parameters as launch_qgemv_v01.
template <typename A = float, typename O = A>
void launch_qgemv(const QuantizedWeightView& w, const nondeduced_t<A>* x, nondeduced_t<O>* y,
                  int batch,
                  cudaStream_t stream, Epilogue epilogue = Epilogue::kStore);

}  // namespace nanoserve
