#pragma once
/// \file
/// \brief GEMV for decode: `y_b = W x_b` for a small batch of input vectors, W in storage type T
/// (fp32, fp16, bf16), x in activation type A, y in A or fp32, fp32 accumulation. Layouts: kernels/linear_common.cuh.
///
/// Decode multiplies each weight by one number per sequence, so GEMV is bound by how fast W
/// streams from memory; the versions (kernels/gemv.cu) are steps toward the copy bandwidth:
///
/// | version | idea it adds |
/// |---|---|
/// | v01 | one thread per output element (uncoalesced baseline) |
/// | v02 | one warp per row: coalesced loads, `__shfl_xor_sync` reduction |
/// | v03 | 16-byte loads, several in flight per lane, 8 rows per block, batch ≤ 16 in registers |
///
/// v03 also takes `Epilogue::kSwiGLU` (W = [gate; up], y with out_dim / 2 columns: the fused
/// gate+up projection, kernels/linear_common.cuh); v01 and v02 throw std::invalid_argument.
///
/// The kernels (kernels/gemv.cuh) are written once over a weight loader and also serve the
/// quantized GEMV (kernels/qgemv.h), whose v01–v03 are these versions over dequantized weights.
/// The numbered versions and launch_gemv_version are built for fp32 activations (A = O = float);
/// launch_gemv, the one the engine uses, for every activation type A and output O = A or fp32.
/// Every launcher takes the same arguments, handles any sizes (tails of the vector width, warp
/// and block), and throws std::invalid_argument for negative sizes or null buffers
/// (`check_linear_args`).

#include "kernels/cuda_compat.h"
#include "kernels/dtype.cuh"
#include "kernels/linear_common.cuh"

namespace nanoserve {

/// \brief Number of GEMV versions (`launch_gemv_version` accepts 1..kGemvVersions).
inline constexpr int kGemvVersions = 3;

/// \brief Largest batch that v03 (and so `launch_gemv`) serves in one pass over W; larger
/// batches are split into chunks of this size, each reading W again.
inline constexpr int kGemvMaxBatch = 16;

/// \brief v01: one thread per output element; each thread walks a whole row of W.
/// \tparam T storage type of W: float, __half or __nv_bfloat16
/// \tparam A storage type of X (activations): float, __half or __nv_bfloat16
/// \tparam O storage type of Y: A, or float (fp32 logits from A activations)
/// \param w        (out_dim, in_dim) device weights, row-major
/// \param x        (batch, in_dim) device inputs
/// \param y        (batch, out_dim) device outputs; must not alias w or x
/// \param batch    number of input vectors (0 launches nothing)
/// \param out_dim  rows of W
/// \param in_dim   columns of W (0 gives y = 0)
/// \param stream   CUDA stream
/// \param epilogue store (y = W x) or accumulate (y += W x)
template <typename T, typename A = float, typename O = A>
void launch_gemv_v01(const T* w, const nondeduced_t<A>* x, nondeduced_t<O>* y, int batch,
                     int out_dim, int in_dim,
                     cudaStream_t stream, Epilogue epilogue = Epilogue::kStore);

/// \brief v02: one warp per row; lanes read consecutive elements, a shuffle butterfly sums.
/// Parameters as launch_gemv_v01.
template <typename T, typename A = float, typename O = A>
void launch_gemv_v02(const T* w, const nondeduced_t<A>* x, nondeduced_t<O>* y, int batch,
                     int out_dim, int in_dim,
                     cudaStream_t stream, Epilogue epilogue = Epilogue::kStore);

/// \brief v03: 16-byte loads of W (scalar loads when rows are not 16-byte aligned), 4 loads in
/// flight per lane, 8 rows per 256-thread block, up to kGemvMaxBatch vectors per pass over W.
/// Parameters as launch_gemv_v01.
template <typename T, typename A = float, typename O = A>
void launch_gemv_v03(const T* w, const nondeduced_t<A>* x, nondeduced_t<O>* y, int batch,
                     int out_dim, int in_dim,
                     cudaStream_t stream, Epilogue epilogue = Epilogue::kStore);

/// \brief Runs version `version` (1..kGemvVersions; anything else throws
/// std::invalid_argument). Parameters as launch_gemv_v01.
template <typename T, typename A = float, typename O = A>
void launch_gemv_version(int version, const T* w, const nondeduced_t<A>* x, nondeduced_t<O>* y,
                         int batch,
                         int out_dim, int in_dim, cudaStream_t stream,
                         Epilogue epilogue = Epilogue::kStore);

/// \brief The best GEMV version (v03). Parameters as launch_gemv_v01.
template <typename T, typename A = float, typename O = A>
void launch_gemv(const T* w, const nondeduced_t<A>* x, nondeduced_t<O>* y, int batch, int out_dim,
                 int in_dim,
                 cudaStream_t stream, Epilogue epilogue = Epilogue::kStore);

}  // namespace nanoserve
