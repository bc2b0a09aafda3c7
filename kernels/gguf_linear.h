#pragma once
/// \file
/// \brief Linear layers whose weights stay in llama.cpp's GGUF block formats on the device —
/// Q8_0, Q4_0, Q4_K and Q6_K, byte for byte as the file stores them (layouts:
/// common/loaders/gguf_quant_blocks.h, gguf_more_blocks.h) — so a Q4_K or Q4_0 linear occupies
/// 4.5 bits per weight of device memory instead of bf16's 16 (Q6_K 6.5625, Q8_0 8.5), and decode
/// streams that many bytes per token.
///
/// Two paths, as llama.cpp's CUDA backend has them:
///  - **GEMV** (decode, up to `kGgufLinearGemvMaxRows` input rows, `kGgufGemvMaxBatch` per pass): the blocks are decoded in
///    registers as they are read and multiplied with the activations in fp32 (llama.cpp's
///    "MMV" idea: the weights never exist dequantized in memory). One warp per output row, the
///    lanes over consecutive blocks of the row, a `__shfl_xor_sync` reduction. Each weight is
///    the exact fp32 value of ggml's `dequantize_row_*` (`d·q`, `d·(q − 8)`, `d·sc·q − dmin·m`,
///    `d·sc·(q − 32)`: each product exact in fp32), so the kernel multiplies the same numbers as
///    the CPU oracle run on the decoded model; only the order of the additions differs.
///  - **Dequantize + GEMM** (prefill, more rows): the blocks are decoded into a scratch matrix
///    in the activation type A, then the dense `launch_linear` (tensor cores for fp16/bf16)
///    runs on it — llama.cpp's dequantize-then-cuBLAS path. The weights are then rounded once to
///    A (exact for fp32; fp16/bf16 round Q4_K's 21-bit and Q6_K's up to 23-bit values), which
///    is the one numerical difference between the two paths.
///
/// Not llama.cpp's MMVQ, which also quantizes the activations to 8 bits and uses integer dot
/// products (dp4a): here activations stay in A and every product is fp32, which keeps the
/// kernel comparable with the oracle to fp32 rounding.

#include <cstddef>
#include <cstdint>

#include "kernels/cuda_compat.h"
#include "kernels/dtype.cuh"
#include "kernels/linear_common.cuh"

namespace nanoserve {

/// \brief The GGUF block formats kept packed on the device.
enum class GgufBlockType {
  kQ8_0,  ///< 32 elements in 34 bytes: fp16 d | int8 q[32]
  kQ4_0,  ///< 32 elements in 18 bytes: fp16 d | 16 bytes of nibbles (j and j + 16 share a byte)
  kQ4_K,  ///< 256 elements in 144 bytes: fp16 d | fp16 dmin | 12 bytes of 6-bit scales/mins | 128 bytes of nibbles
  kQ6_K,  ///< 256 elements in 210 bytes: ql[128] | qh[64] | int8 scales[16] | fp16 d
};

/// \brief Elements per block of `type` (32 or 256).
__host__ __device__ inline int gguf_block_elements(GgufBlockType type) {
  return type == GgufBlockType::kQ4_K || type == GgufBlockType::kQ6_K ? 256 : 32;
}

/// \brief Bytes per block of `type` (34, 18, 144 or 210).
__host__ __device__ inline int gguf_block_bytes(GgufBlockType type) {
  return type == GgufBlockType::kQ8_0   ? 34
         : type == GgufBlockType::kQ4_0 ? 18
         : type == GgufBlockType::kQ4_K ? 144
                                        : 210;
}

/// \brief A device view of a GGUF-quantized weight W (rows, cols): the row's blocks back to
/// back, rows back to back (GGUF's layout: dims [cols, rows], innermost first). Non-owning,
/// trivially copyable. `cols` must be a multiple of the block's element count (the GGUF parser
/// guarantees it for files), and `blocks` aligned to 16 bytes for Q4_K, 2 for Q8_0 / Q4_0 / Q6_K
/// (every device allocation is, and so is a tensor at GGUF's 32-byte data alignment).
struct GgufWeightView {
  const std::uint8_t* blocks = nullptr;      ///< rows × row_bytes() bytes
  int rows = 0;                              ///< output features
  int cols = 0;                              ///< input features, a multiple of the block size
  GgufBlockType type = GgufBlockType::kQ8_0; ///< block format

  /// \brief Bytes of one row of blocks.
  __host__ __device__ std::int64_t row_bytes() const {
    return static_cast<std::int64_t>(cols / gguf_block_elements(type)) * gguf_block_bytes(type);
  }
};

/// \brief Input rows the GEMV keeps in registers per pass over W; more rows run in several
/// passes (`launch_gguf_linear` switches to dequantize + GEMM beyond kGgufLinearGemvMaxRows).
inline constexpr int kGgufGemvMaxBatch = 8;

/// \brief `Y = X Wᵀ` with W decoded in registers (see the file comment), in passes of
/// `kGgufGemvMaxBatch` rows. Epilogues as `launch_linear` (kStore, kAccumulate, kSwiGLU with W
/// = [gate; up] and Y of rows / 2 columns). Throws std::invalid_argument for a bad view (null
/// or misaligned blocks, cols not a multiple of the block size, negative sizes), null x / y or
/// x / y not aligned to their element size, or an odd row count under kSwiGLU. (A 16-byte
/// aligned x is read in 16-byte loads, any other x element by element.)
/// \tparam A activation type of X: float, __half or __nv_bfloat16
/// \tparam O type of Y: A (instantiated for (float, float), (__half, __half) and
///           (__nv_bfloat16, __nv_bfloat16) only — fp32 logits from half activations come from
///           the classifier, which is always dense: fewer instantiations, less compile time)
/// \param w        the packed weight
/// \param x        (batch, cols) device inputs
/// \param y        (batch, out) device outputs, out = rows (rows / 2 under kSwiGLU)
/// \param batch    input rows (0 launches nothing)
/// \param stream   CUDA stream
/// \param epilogue store, accumulate or SwiGLU
template <typename A = float, typename O = A>
void launch_gguf_gemv(const GgufWeightView& w, const nondeduced_t<A>* x, nondeduced_t<O>* y,
                      int batch, cudaStream_t stream, Epilogue epilogue = Epilogue::kStore);

/// \brief W decoded to T (rows, cols) row-major on the device: each element the fp32 value of
/// ggml's `dequantize_row_*`, rounded once to T. Throws std::invalid_argument for a bad view or
/// a null `out`.
/// \tparam T float, __half or __nv_bfloat16
template <typename T>
void launch_gguf_dequantize(const GgufWeightView& w, T* out, cudaStream_t stream);

/// \brief Rows up to this run `launch_gguf_linear` as the GEMV (in passes of
/// kGgufGemvMaxBatch), more as dequantize + GEMM. Two GEMV passes read 2 × 4.5 bits per Q4 weight;
/// dequantizing writes and reads 16 (and the dense path would still be a GEMV up to
/// kLinearGemvMaxRows), so the switch sits where the dense one does: a reasoned choice, for a
/// GPU run (`bench_kernels`) to revisit.
inline constexpr int kGgufLinearGemvMaxRows = 16;

/// \brief One GGUF linear layer for any number of rows: `launch_gguf_gemv` up to
/// `kGgufLinearGemvMaxRows` rows; beyond, `launch_gguf_dequantize` into `scratch` (at least
/// rows × cols elements of A; throws std::invalid_argument when it is null or smaller) and the
/// dense `launch_linear<A, A, O>` (the tensor-core GEMM for fp16/bf16). Parameters as
/// `launch_gguf_gemv`. The scratch is only checked and used beyond kGgufLinearGemvMaxRows rows,
/// so a decode-only caller may pass none.
template <typename A = float, typename O = A>
void launch_gguf_linear(const GgufWeightView& w, const nondeduced_t<A>* x, nondeduced_t<O>* y,
                        int batch, nondeduced_t<A>* scratch, std::size_t scratch_elements,
                        cudaStream_t stream, Epilogue epilogue = Epilogue::kStore);

}  // namespace nanoserve
