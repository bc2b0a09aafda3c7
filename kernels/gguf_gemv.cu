// GGUF GEMV for decode: y_b = W x_b with W in Q8_0, Q4_0, Q4_K or Q6_K blocks, decoded in registers
// (llama.cpp's "MMV" idea: the weights never exist dequantized in memory). See
// kernels/gguf_linear.h for the API and the numerics, kernels/gguf_blocks.cuh for the decoders.
//
// One version (v01), the dense GEMV's chunk loop (gemv.cuh: gemv_chunk_kernel, which also gives
// the epilogues) over a loader of GGUF chunks:
//   - one warp per output row, 8 warps per 256-thread block; under Epilogue::kSwiGLU the warp
//     sums gate row j, then up row j + rows/2, and stores silu(gate) · up;
//   - lane l takes chunks l, l + 32, … of the row, `kUnroll` chunks' loads issued before the
//     first is decoded. A chunk is a quarter block (Q8_0: 8 weights), half a block (Q4_0: 16)
//     or a quarter super-block (Q4_K: 64 = sub-blocks 2k and 2k + 1; Q6_K: 64 = four runs of
//     16 columns; 4 lanes per super-block), so a 4096-wide row has 512, 256 or 64 chunks: all
//     32 lanes busy in every format;
//   - neighbouring lanes read neighbouring chunks: each load instruction of a warp reads one
//     contiguous stretch of the row (gguf_blocks.cuh), and every byte fetched is used;
//   - up to kGgufGemvMaxBatch (8) input vectors accumulate in registers (tiers 1 and 8: two
//     kernels per format and type pair keep the compile time down; a batch of 2..7 runs the
//     8-wide kernel, skipping the missing vectors), more in passes that read W again;
//   - x is read through L1 in pieces of 8 columns (16-byte loads when x is 16-byte aligned,
//     element loads otherwise), products accumulated in fp32, the 32 partial sums reduced by a
//     __shfl_xor_sync butterfly, y rounded once on store (kAccumulate: y += Wx, rounded once).
//
// Not done here (a v02 for a GPU run to justify): llama.cpp's MMVQ, which quantizes x to int8 and
// multiplies with dp4a — faster at 4 bits, but its products are no longer the oracle's (see
// kernels/README.md, "GGUF weights on the device"); more rows per warp to share x loads.
//
// Tests: tests/kernels/test_gguf_linear.cpp. Benchmark: `bench_kernels --kernel gguf_gemv`.
#include <cstdint>

#include "kernels/dtype.cuh"
#include "kernels/gemv.cuh"
#include "kernels/gguf_blocks.cuh"
#include "kernels/gguf_linear.h"
#include "kernels/kernel_args.h"
#include "kernels/linear_common.cuh"
#include "kernels/vec_load.cuh"

namespace nanoserve {
namespace {

using gemv_detail::kWarp;
using gguf_detail::kPiece;

/// The chunk loader of the GGUF GEMV (the interface of gemv.cuh's chunk loop) over format F.
template <typename F>
struct GgufChunks {
  const std::uint8_t* blocks;  // (rows, row_bytes)
  int rows;                    // rows of W
  int cols;                    // columns of W: the stride of x
  std::int64_t row_bytes;      // bytes per row of blocks
  bool x_vector;               // x 16-byte aligned: pieces of x in 16-byte loads

  __device__ __forceinline__ int chunks() const { return cols / F::kChunkValues; }

  // acc[r][b] += W[row_of[r], chunk columns] · x_b[chunk columns] for chunks c, c + 32, …
  template <int kBatch, int kRows, int kCount, typename X>
  __device__ __forceinline__ void accumulate(const int (&row_of)[kRows],
                                             const X* __restrict__ x, int batch, int c,
                                             float (&acc)[kRows][kBatch]) const {
    typename F::Raw raw[kCount][kRows];  // every load issued before the first is decoded
    NS_UNROLL
    for (int u = 0; u < kCount; ++u) {
      NS_UNROLL
      for (int r = 0; r < kRows; ++r) {
        raw[u][r] = F::load(blocks + row_of[r] * row_bytes, c + u * kWarp);
      }
    }
    NS_UNROLL
    for (int u = 0; u < kCount; ++u) {
      const int chunk = c + u * kWarp;
      typename F::Params p[kRows];
      NS_UNROLL
      for (int r = 0; r < kRows; ++r) p[r] = F::params(raw[u][r], chunk);
      const X* x_chunk = x + F::chunk_col(chunk);  // the chunk's first column of x_0
      NS_UNROLL
      for (int i = 0; i < F::kPieces; ++i) {
        float wv[kRows][kPiece];
        NS_UNROLL
        for (int r = 0; r < kRows; ++r) F::piece(raw[u][r], p[r], i, wv[r]);
        NS_UNROLL
        for (int b = 0; b < kBatch; ++b) {
          if (b < batch) {  // uniform across the warp
            const X* xp =  // (kPiece) of x_b
                x_chunk + static_cast<std::int64_t>(b) * cols + F::piece_col(i);
            float xv[kPiece];
            if (x_vector) {
              load_as_floats<kPiece>(xp, xv);
            } else {
              NS_UNROLL
              for (int j = 0; j < kPiece; ++j) xv[j] = to_float(xp[j]);
            }
            NS_UNROLL
            for (int r = 0; r < kRows; ++r) {
              NS_UNROLL
              for (int j = 0; j < kPiece; ++j) acc[r][b] += wv[r][j] * xv[j];
            }
          }
        }
      }
    }
  }
};

// The chunk loop over format F, in passes of kGgufGemvMaxBatch vectors.
template <typename F, typename X, typename Y>
void run_gemv(const GgufWeightView& w, const X* x, Y* y, int batch, cudaStream_t stream,
              Epilogue epilogue) {
  using Chunks = GgufChunks<F>;
  const Chunks chunks{w.blocks, w.rows, w.cols, w.row_bytes(), aligned16(x)};
  const int out_rows = epilogue_out_features(w.rows, epilogue);
  const dim3 grid(kargs::blocks_for(out_rows, gemv_detail::kWarpsPerBlock));
  const dim3 block(gemv_detail::kWarpsPerBlock * kWarp);
  for (int b0 = 0; b0 < batch; b0 += kGgufGemvMaxBatch) {
    const int nb = batch - b0 < kGgufGemvMaxBatch ? batch - b0 : kGgufGemvMaxBatch;
    const X* xb = x + static_cast<std::int64_t>(b0) * w.cols;  // (nb, cols)
    Y* yb = y + static_cast<std::int64_t>(b0) * out_rows;      // (nb, out_rows)
    if (nb == 1) {
      launch(gemv_detail::gemv_chunk_kernel<Chunks, 1, 1, F::kUnroll, X, Y>, grid, block, 0,
             stream, chunks, xb, yb, nb, epilogue);
    } else {
      launch(gemv_detail::gemv_chunk_kernel<Chunks, kGgufGemvMaxBatch, 1, F::kUnroll, X, Y>,
             grid, block, 0, stream, chunks, xb, yb, nb, epilogue);
    }
  }
}

}  // namespace

template <typename A, typename O>
void launch_gguf_gemv(const GgufWeightView& w, const nondeduced_t<A>* x, nondeduced_t<O>* y,
                      int batch, cudaStream_t stream, Epilogue epilogue) {
  if (check_gguf_linear_args("launch_gguf_gemv", w, x, y, batch, sizeof(A), sizeof(O),
                             epilogue)) {
    return;
  }
  gguf_detail::dispatch_format(w.type, [&](auto format) {
    run_gemv<decltype(format)>(w, x, y, batch, stream, epilogue);
  });
}

#define NANOSERVE_GGUF_GEMV_INSTANTIATE(A, O)                                                   \
  template void launch_gguf_gemv<A, O>(const GgufWeightView&, const A*, O*, int, cudaStream_t, \
                                       Epilogue);
NANOSERVE_GGUF_GEMV_INSTANTIATE(float, float)
NANOSERVE_GGUF_GEMV_INSTANTIATE(__half, __half)
NANOSERVE_GGUF_GEMV_INSTANTIATE(__nv_bfloat16, __nv_bfloat16)
#undef NANOSERVE_GGUF_GEMV_INSTANTIATE

}  // namespace nanoserve
