// GGUF blocks -> dense (rows, cols) matrix in T, the first half of the prefill path of
// launch_gguf_linear (kernels/gguf_linear.h; llama.cpp's dequantize-then-cuBLAS).
//
// One version (v01): one thread per chunk (a quarter Q8_0 block, half a Q4_0 block, a quarter Q4_K
// or Q6_K super-block: kernels/gguf_blocks.cuh), decoded by the same format policies as the GEMV,
// so each value is the fp32 of ggml's dequantize_row_* (the tests check it bitwise), rounded once
// to T. Neighbouring threads read neighbouring chunks and write their values in pieces of 8
// consecutive columns. The kernel is bound by writing the matrix (16 or 32 bits per weight against
// the 4.5–8.5 bits read); it runs once per prefill chunk per layer, whose GEMM then reuses each
// weight for every row.
//
// Tests: tests/kernels/test_gguf_linear.cpp (GgufDequantize).
#include <cstdint>

#include "kernels/dtype.cuh"
#include "kernels/gguf_blocks.cuh"
#include "kernels/gguf_linear.h"
#include "kernels/kernel_args.h"

namespace nanoserve {
namespace {

constexpr int kDequantizeBlock = 256;

// out (rows, cols) = W decoded, rounded to T; thread t decodes chunk t of the row-major list
// of (row, chunk). grid (ceil(rows · chunks / 256)), block 256.
template <typename F, typename T>
__global__ void __launch_bounds__(kDequantizeBlock)
    gguf_dequantize_kernel(const std::uint8_t* __restrict__ blocks, std::int64_t row_bytes,
                           int rows, int cols, T* __restrict__ out) {
  const int chunks = cols / F::kChunkValues;
  const std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= static_cast<std::int64_t>(rows) * chunks) return;
  const int row = static_cast<int>(t / chunks);
  const int chunk = static_cast<int>(t % chunks);
  const typename F::Raw raw = F::load(blocks + row * row_bytes, chunk);
  const typename F::Params p = F::params(raw, chunk);
  T* dst = out + static_cast<std::int64_t>(row) * cols + F::chunk_col(chunk);
  NS_UNROLL
  for (int i = 0; i < F::kPieces; ++i) {
    float w[gguf_detail::kPiece];
    F::piece(raw, p, i, w);
    NS_UNROLL
    for (int j = 0; j < gguf_detail::kPiece; ++j) {
      dst[F::piece_col(i) + j] = from_float<T>(w[j]);
    }
  }
}

}  // namespace

template <typename T>
void launch_gguf_dequantize(const GgufWeightView& w, T* out, cudaStream_t stream) {
  constexpr const char* kOp = "launch_gguf_dequantize";
  const bool empty = w.rows == 0 || w.cols == 0;
  check_gguf_view(kOp, w, !empty);
  if (empty) return;
  kargs::require(out != nullptr, kOp, "out is null");
  kargs::require(reinterpret_cast<std::uintptr_t>(out) % sizeof(T) == 0, kOp,
                 "out is not " + std::to_string(sizeof(T)) + "-byte aligned");
  gguf_detail::dispatch_format(w.type, [&](auto format) {
    using F = decltype(format);
    const std::int64_t threads = static_cast<std::int64_t>(w.rows) * (w.cols / F::kChunkValues);
    launch(gguf_dequantize_kernel<F, T>, dim3(kargs::blocks_for(threads, kDequantizeBlock)),
           dim3(kDequantizeBlock), 0, stream, w.blocks, w.row_bytes(), w.rows, w.cols, out);
  });
}

template void launch_gguf_dequantize<float>(const GgufWeightView&, float*, cudaStream_t);
template void launch_gguf_dequantize<__half>(const GgufWeightView&, __half*, cudaStream_t);
template void launch_gguf_dequantize<__nv_bfloat16>(const GgufWeightView&, __nv_bfloat16*,
                                                    cudaStream_t);

}  // namespace nanoserve
