// GEMV for decode: y_b = W x_b for a small batch b of input vectors.
//   W (out_dim, in_dim) row-major, storage type T; x (batch, in_dim) in activation type A;
//   y (batch, out_dim) in A or fp32 (x widened on load, y rounded once on store)
//
// The kernels are gemv.cuh's, shared with the quantized GEMV (kernels/qgemv.cu): v01 and v02
// over the element loader DenseWeights<T>, v03 the chunk loop over this file's VectorChunks<T>.
//
// Versions (each adds one idea; benchmark with `bench_kernels --kernel gemv`):
//   v01  one thread per output element y[b][row], looping over the row. Neighbouring threads
//        read addresses in_dim * sizeof(T) apart, so every load is its own memory transaction.
//   v02  one warp per row: lane i reads elements i, i+32, … so a warp's loads are contiguous
//        (coalesced); the 32 partial sums meet in a __shfl_xor_sync butterfly.
//   v03  the same warp-per-row shape tuned for bandwidth (gemv.cuh's chunk loop): 16-byte loads
//        of W (8 fp16 weights per instruction), 4 of them issued before any is used (more bytes
//        in flight per lane), 8 rows per 256-thread block (a 32-thread block caps occupancy at
//        half an SM), and up to 16 input vectors accumulated in registers, so W is read once per
//        batch. x is *not* staged in shared memory: each block would copy all of x for only 8
//        rows of W (16 KiB per 64 KiB of fp16 weights at in_dim 4096: +25% traffic), and at
//        in_dim 14336 one vector alone is 56 KiB, more than a block's default 48 KiB. Read
//        through L1, x is fetched about once per SM and stays cached while W streams past it
//        (W loads are marked evict-first). Rows that are not 16-byte aligned take the same loop
//        with one-element chunks (ElementChunks): correct for any size, only slower.
//
//   W row:  | c0 | c1 | … | c31 | c32 | … |      (c = 16 bytes: 4 fp32 or 8 fp16/bf16)
//             l0   l1       l31   l0          -> each warp-wide load is 512 contiguous bytes
//
// v03 also takes Epilogue::kSwiGLU (gemv.cuh: a warp sums a gate row, then its up row, and
// stores silu(gate) · up); v01 and v02 refuse it.
//
// launch_gemv dispatches to v03. Tests: tests/kernels/test_gemv.cpp (every version x dtype
// against oracle::gemv).
#include <cstdint>

#include "kernels/dtype.cuh"
#include "kernels/gemv.cuh"
#include "kernels/gemv.h"
#include "kernels/kernel_args.h"
#include "kernels/linear_common.cuh"
#include "kernels/vec_load.cuh"

namespace nanoserve {
namespace {

using gemv_detail::kWarp;

// ---------------------------------------------------------------------------------------------
// v01, v02: gemv_kernel_v01 / gemv_kernel_v02 (gemv.cuh) over DenseWeights<T>.

// ---------------------------------------------------------------------------------------------
// v03: gemv_chunk_kernel (gemv.cuh) over 16-byte chunks of weights.

// A chunk is kVec16<T> weights loaded with one 16-byte load (rows 16-byte aligned: in_dim a
// multiple of kVec16<T>, w and x 16-byte aligned; the launcher's job).
template <typename T>
struct VectorChunks : DenseWeights<T> {
  static constexpr int kVec = kVec16<T>;

  __device__ __forceinline__ int chunks() const { return this->cols / kVec; }

  template <int kBatch, int kRows, int kCount, typename X>
  __device__ __forceinline__ void accumulate(const int (&row_of)[kRows],
                                             const X* __restrict__ x, int batch, int c,
                                             float (&acc)[kRows][kBatch]) const {
    uint4 raw[kCount][kRows];
    NS_UNROLL
    for (int u = 0; u < kCount; ++u) {
      NS_UNROLL
      for (int r = 0; r < kRows; ++r) {
        raw[u][r] = load16_streaming(this->w + static_cast<std::int64_t>(row_of[r]) * this->cols +
                                     static_cast<std::int64_t>(c + u * kWarp) * kVec);
      }
    }
    NS_UNROLL
    for (int u = 0; u < kCount; ++u) {
      const std::int64_t col0 = static_cast<std::int64_t>(c + u * kWarp) * kVec;
      float wf[kRows][kVec];
      NS_UNROLL
      for (int r = 0; r < kRows; ++r) {
        NS_UNROLL
        for (int i = 0; i < kVec; ++i) wf[r][i] = unpack16<T>(raw[u][r], i);
      }
      NS_UNROLL
      for (int b = 0; b < kBatch; ++b) {
        if (b < batch) {  // uniform across the warp
          float xf[kVec];
          load_as_floats<kVec>(x + static_cast<std::int64_t>(b) * this->cols + col0, xf);
          NS_UNROLL
          for (int r = 0; r < kRows; ++r) {
            NS_UNROLL
            for (int i = 0; i < kVec; ++i) acc[r][b] += wf[r][i] * xf[i];
          }
        }
      }
    }
  }
};

constexpr int kV03Unroll = 4;  // chunk loads issued per lane before the first is consumed

// ---------------------------------------------------------------------------------------------
// launchers

template <int kVersion, typename T, typename X, typename Y>
void dense_gemv(const char* op, const T* w, const X* x, Y* y, int batch, int out_dim,
                int in_dim, cudaStream_t stream, Epilogue epilogue) {
  check_epilogue(op, out_dim, epilogue, kVersion >= 3);
  if (check_linear_args(op, w, x, y, batch, out_dim, in_dim)) return;
  const DenseWeights<T> weights{w, out_dim, in_dim};
  if constexpr (kVersion <= 2) {
    gemv_detail::launch_gemv_elementwise<kVersion>(weights, x, y, batch, stream, epilogue);
  } else if (in_dim % kVec16<T> == 0 && aligned16(w) && aligned16(x)) {
    // 16-byte loads need every row start (and x's) 16-byte aligned: real models satisfy this
    // (dims are multiples of 64); anything else takes one-element chunks.
    gemv_detail::launch_gemv_chunks<1, kV03Unroll>(VectorChunks<T>{weights}, x, y, batch, stream,
                                                   epilogue);
  } else {
    gemv_detail::launch_gemv_chunks<1, kV03Unroll>(
        gemv_detail::ElementChunks<DenseWeights<T>>{weights}, x, y, batch, stream, epilogue);
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// dispatch (launch_gemv is v03)

NANOSERVE_DENSE_LINEAR_LAUNCHER(launch_gemv_v01, dense_gemv, 1,
                                NANOSERVE_DENSE_LINEAR_INSTANTIATE_FP32)
NANOSERVE_DENSE_LINEAR_LAUNCHER(launch_gemv_v02, dense_gemv, 2,
                                NANOSERVE_DENSE_LINEAR_INSTANTIATE_FP32)
NANOSERVE_DENSE_LINEAR_LAUNCHER(launch_gemv_v03, dense_gemv, 3,
                                NANOSERVE_DENSE_LINEAR_INSTANTIATE_FP32)
NANOSERVE_DENSE_LINEAR_LAUNCHER(launch_gemv, dense_gemv, 3,
                                NANOSERVE_DENSE_LINEAR_INSTANTIATE)
NANOSERVE_DENSE_LINEAR_VERSION_LAUNCHER(launch_gemv_version, dense_gemv, kGemvVersions)

}  // namespace nanoserve
