// GEMV for decode: y_b = W x_b for a small batch b of input vectors.
//   W (out_dim, in_dim) row-major, storage type T; x (batch, in_dim) fp32; y (batch, out_dim) fp32
//
// Versions (each adds one idea; benchmark with `bench_kernels --kernel gemv`):
//   v01  one thread per output element y[b][row], looping over the row. Neighbouring threads
//        read addresses in_dim * sizeof(T) apart, so every load is its own memory transaction.
//   v02  one warp per row: lane i reads elements i, i+32, … so a warp's loads are contiguous
//        (coalesced); the 32 partial sums meet in a __shfl_xor_sync butterfly.
//   v03  the same warp-per-row shape tuned for bandwidth: 16-byte loads of W (8 fp16 weights per
//        instruction), 4 of them issued before any is used (more bytes in flight per lane), 8 rows
//        per 256-thread block (a 32-thread block caps occupancy at half an SM), and up to 16
//        input vectors accumulated in registers, so W is read once per batch.
//        x is *not* staged in shared memory: each block would copy all of x for only 8 rows of
//        W (16 KiB per 64 KiB of fp16 weights at in_dim 4096: +25% traffic), and at in_dim 14336
//        one vector alone is 56 KiB, more than a block's default 48 KiB. Read through L1, x is
//        fetched about once per SM and stays cached while W streams past it (W loads are marked
//        evict-first).
//
// launch_gemv dispatches to v03. Tests: tests/kernels/test_gemv.cpp (every version x dtype
// against oracle::gemv).
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "kernels/dtype.cuh"
#include "kernels/gemv.h"

namespace nanoserve {
namespace {

constexpr int kWarp = 32;
constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kMaxGridY = 65535;

// Sum of v over the 32 lanes of a warp, returned to every lane (a butterfly: after step s each
// lane holds the sum of a group of 2^s lanes). All 32 lanes must be present.
__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    v += __shfl_xor_sync(kFullMask, v, offset);
  }
  return v;
}

// ---------------------------------------------------------------------------------------------
// v01: one thread per output element. grid (ceil(out_dim / 256), batch), block 256.

template <typename T>
__global__ void gemv_kernel_v01(const T* __restrict__ w, const float* __restrict__ x,
                                float* __restrict__ y, int out_dim, int in_dim,
                                Epilogue epilogue) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  const int b = blockIdx.y;
  if (row >= out_dim) return;
  const T* w_row = w + static_cast<std::int64_t>(row) * in_dim;  // (in_dim)
  const float* x_b = x + static_cast<std::int64_t>(b) * in_dim;  // (in_dim)
  float acc = 0.0f;
  for (int k = 0; k < in_dim; ++k) acc += to_float(w_row[k]) * x_b[k];
  apply_epilogue(&y[static_cast<std::int64_t>(b) * out_dim + row], acc, epilogue);
}

// ---------------------------------------------------------------------------------------------
// v02: one warp (a 32-thread block) per row. grid (out_dim, batch), block 32.

template <typename T>
__global__ void gemv_kernel_v02(const T* __restrict__ w, const float* __restrict__ x,
                                float* __restrict__ y, int out_dim, int in_dim,
                                Epilogue epilogue) {
  const int row = blockIdx.x;
  const int b = blockIdx.y;
  const int lane = threadIdx.x;
  const T* w_row = w + static_cast<std::int64_t>(row) * in_dim;  // (in_dim)
  const float* x_b = x + static_cast<std::int64_t>(b) * in_dim;  // (in_dim)
  float acc = 0.0f;
  for (int k = lane; k < in_dim; k += kWarp) acc += to_float(w_row[k]) * x_b[k];
  acc = warp_sum(acc);
  if (lane == 0) apply_epilogue(&y[static_cast<std::int64_t>(b) * out_dim + row], acc, epilogue);
}

// ---------------------------------------------------------------------------------------------
// v03: one warp per row, 8 rows per block, kVec-element loads (16 bytes, or 1 element when rows
// are not 16-byte aligned), kUnroll loads in flight, kBatch vectors per pass.
//
//   block (256 threads) = 8 warps  ->  rows blockIdx.x*8 .. +7
//   lane l of a warp reads chunks l, l+32, l+64, … of its row; a chunk is kVec elements:
//
//   W row:  | c0 | c1 | … | c31 | c32 | … |      (c = 16 bytes: 4 fp32 or 8 fp16/bf16)
//             l0   l1       l31   l0          -> each warp-wide load is 512 contiguous bytes

constexpr int kV03Rows = 8;    // warps (= rows) per block
constexpr int kV03Unroll = 4;  // chunk loads issued per lane before the first is consumed

// kVec weights of storage type T, loaded together.
template <typename T, int kVec>
struct alignas(sizeof(T) * kVec) WeightChunk {
  T v[kVec];
};

template <typename T, int kVec>
__device__ __forceinline__ WeightChunk<T, kVec> load_weights(const T* p) {
  WeightChunk<T, kVec> chunk;
  if constexpr (kVec == 1) {
    chunk.v[0] = p[0];
  } else {
    static_assert(sizeof(chunk) == 16, "vector chunks are 16 bytes");
#if defined(__CUDA_ARCH__)
    // One 128-bit load, marked streaming (evict first): each weight is used once, so it should
    // not push x out of the caches.
    const int4 bits = __ldcs(reinterpret_cast<const int4*>(p));
    memcpy(&chunk, &bits, sizeof(chunk));
#else
    memcpy(&chunk, p, sizeof(chunk));  // portable fallback: a plain 16-byte copy
#endif
  }
  return chunk;
}

// kVec consecutive fp32 inputs starting at p (16-byte aligned when kVec > 1).
template <int kVec>
__device__ __forceinline__ void load_inputs(const float* p, float (&out)[kVec]) {
  if constexpr (kVec == 1) {
    out[0] = p[0];
  } else {
    const float4* p4 = reinterpret_cast<const float4*>(p);
    NS_UNROLL
    for (int i = 0; i < kVec / 4; ++i) {
      const float4 v = p4[i];
      out[4 * i + 0] = v.x;
      out[4 * i + 1] = v.y;
      out[4 * i + 2] = v.z;
      out[4 * i + 3] = v.w;
    }
  }
}

// acc[b] += chunk . x_b[c*kVec .. c*kVec + kVec) for every vector b < batch.
template <typename T, int kVec, int kBatch>
__device__ __forceinline__ void accumulate_chunk(const WeightChunk<T, kVec>& chunk,
                                                 const float* __restrict__ x, int c, int batch,
                                                 int in_dim, float (&acc)[kBatch]) {
  float wf[kVec];
  NS_UNROLL
  for (int i = 0; i < kVec; ++i) wf[i] = to_float(chunk.v[i]);
  NS_UNROLL
  for (int b = 0; b < kBatch; ++b) {
    if (b < batch) {
      float xf[kVec];
      load_inputs<kVec>(
          x + static_cast<std::int64_t>(b) * in_dim + static_cast<std::int64_t>(c) * kVec, xf);
      NS_UNROLL
      for (int i = 0; i < kVec; ++i) acc[b] += wf[i] * xf[i];
    }
  }
}

// batch <= kBatch; in_dim % kVec == 0, and w, x 16-byte aligned when kVec > 1 (launcher's job).
template <typename T, int kVec, int kBatch>
__global__ void __launch_bounds__(kV03Rows * kWarp)
    gemv_kernel_v03(const T* __restrict__ w, const float* __restrict__ x, float* __restrict__ y,
                    int batch, int out_dim, int in_dim, Epilogue epilogue) {
  const int lane = threadIdx.x % kWarp;
  const int row = blockIdx.x * kV03Rows + threadIdx.x / kWarp;
  if (row >= out_dim) return;  // the whole warp leaves together: its shuffles stay full-mask

  const T* w_row = w + static_cast<std::int64_t>(row) * in_dim;  // (in_dim)
  const int chunks = in_dim / kVec;
  float acc[kBatch];
  NS_UNROLL
  for (int b = 0; b < kBatch; ++b) acc[b] = 0.0f;

  // Main loop, while all kV03Unroll chunks of this lane exist: issue every load first, so that
  // kV03Unroll independent requests per lane are in flight together — that is what keeps HBM
  // busy (Little's law: bandwidth = bytes in flight / latency).
  int c = lane;
  for (; c + (kV03Unroll - 1) * kWarp < chunks; c += kV03Unroll * kWarp) {
    WeightChunk<T, kVec> wc[kV03Unroll];
    NS_UNROLL
    for (int u = 0; u < kV03Unroll; ++u) {
      wc[u] = load_weights<T, kVec>(w_row + static_cast<std::int64_t>(c + u * kWarp) * kVec);
    }
    NS_UNROLL
    for (int u = 0; u < kV03Unroll; ++u) {
      accumulate_chunk<T, kVec, kBatch>(wc[u], x, c + u * kWarp, batch, in_dim, acc);
    }
  }
  // Tail: fewer than kV03Unroll chunks left for this lane.
  for (; c < chunks; c += kWarp) {
    const WeightChunk<T, kVec> wc =
        load_weights<T, kVec>(w_row + static_cast<std::int64_t>(c) * kVec);
    accumulate_chunk<T, kVec, kBatch>(wc, x, c, batch, in_dim, acc);
  }

  NS_UNROLL
  for (int b = 0; b < kBatch; ++b) {
    if (b < batch) {  // same value on every lane: not divergent
      const float sum = warp_sum(acc[b]);
      if (lane == 0) {
        apply_epilogue(&y[static_cast<std::int64_t>(b) * out_dim + row], sum, epilogue);
      }
    }
  }
}

bool is_aligned_16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

template <typename T, int kVec>
void launch_v03_pass(const T* w, const float* x, float* y, int batch, int out_dim, int in_dim,
                     cudaStream_t stream, Epilogue epilogue) {
  const dim3 grid((out_dim + kV03Rows - 1) / kV03Rows);
  const dim3 block(kV03Rows * kWarp);
  // Batch tiers: registers for kBatch accumulators, the `b < batch` guard skips the rest.
  if (batch <= 1) {
    launch(gemv_kernel_v03<T, kVec, 1>, grid, block, 0, stream, w, x, y, batch, out_dim, in_dim,
           epilogue);
  } else if (batch <= 4) {
    launch(gemv_kernel_v03<T, kVec, 4>, grid, block, 0, stream, w, x, y, batch, out_dim, in_dim,
           epilogue);
  } else {
    launch(gemv_kernel_v03<T, kVec, kGemvMaxBatch>, grid, block, 0, stream, w, x, y, batch,
           out_dim, in_dim, epilogue);
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// launchers

template <typename T>
void launch_gemv_v01(const T* w, const float* x, float* y, int batch, int out_dim, int in_dim,
                     cudaStream_t stream, Epilogue epilogue) {
  if (check_linear_args("launch_gemv_v01", w, x, y, batch, out_dim, in_dim)) return;
  constexpr int kBlock = 256;
  for (int b0 = 0; b0 < batch; b0 += kMaxGridY) {  // gridDim.y is limited to 65535
    const int nb = batch - b0 < kMaxGridY ? batch - b0 : kMaxGridY;
    launch(gemv_kernel_v01<T>, dim3((out_dim + kBlock - 1) / kBlock, nb), dim3(kBlock), 0,
           stream, w, x + static_cast<std::int64_t>(b0) * in_dim,
           y + static_cast<std::int64_t>(b0) * out_dim, out_dim, in_dim, epilogue);
  }
}

template <typename T>
void launch_gemv_v02(const T* w, const float* x, float* y, int batch, int out_dim, int in_dim,
                     cudaStream_t stream, Epilogue epilogue) {
  if (check_linear_args("launch_gemv_v02", w, x, y, batch, out_dim, in_dim)) return;
  for (int b0 = 0; b0 < batch; b0 += kMaxGridY) {
    const int nb = batch - b0 < kMaxGridY ? batch - b0 : kMaxGridY;
    launch(gemv_kernel_v02<T>, dim3(out_dim, nb), dim3(kWarp), 0, stream, w,
           x + static_cast<std::int64_t>(b0) * in_dim,
           y + static_cast<std::int64_t>(b0) * out_dim, out_dim, in_dim, epilogue);
  }
}

template <typename T>
void launch_gemv_v03(const T* w, const float* x, float* y, int batch, int out_dim, int in_dim,
                     cudaStream_t stream, Epilogue epilogue) {
  if (check_linear_args("launch_gemv_v03", w, x, y, batch, out_dim, in_dim)) return;
  constexpr int kVec = 16 / sizeof(T);
  // 16-byte loads need every row start (and x's) 16-byte aligned: in_dim a multiple of kVec and
  // aligned base pointers. Real models satisfy this (dims are multiples of 64); anything else
  // takes the same kernel with one-element loads, so odd sizes stay correct, only slower.
  const bool vector_loads = in_dim % kVec == 0 && is_aligned_16(w) && is_aligned_16(x);
  for (int b0 = 0; b0 < batch; b0 += kGemvMaxBatch) {
    const int nb = batch - b0 < kGemvMaxBatch ? batch - b0 : kGemvMaxBatch;
    const float* xb = x + static_cast<std::int64_t>(b0) * in_dim;
    float* yb = y + static_cast<std::int64_t>(b0) * out_dim;
    if (vector_loads) {
      launch_v03_pass<T, kVec>(w, xb, yb, nb, out_dim, in_dim, stream, epilogue);
    } else {
      launch_v03_pass<T, 1>(w, xb, yb, nb, out_dim, in_dim, stream, epilogue);
    }
  }
}

template <typename T>
void launch_gemv_version(int version, const T* w, const float* x, float* y, int batch,
                         int out_dim, int in_dim, cudaStream_t stream, Epilogue epilogue) {
  switch (version) {
    case 1: return launch_gemv_v01(w, x, y, batch, out_dim, in_dim, stream, epilogue);
    case 2: return launch_gemv_v02(w, x, y, batch, out_dim, in_dim, stream, epilogue);
    case 3: return launch_gemv_v03(w, x, y, batch, out_dim, in_dim, stream, epilogue);
    default:
      throw std::invalid_argument("launch_gemv_version: version " + std::to_string(version) +
                                  " does not exist (1.." + std::to_string(kGemvVersions) + ")");
  }
}

template <typename T>
void launch_gemv(const T* w, const float* x, float* y, int batch, int out_dim, int in_dim,
                 cudaStream_t stream, Epilogue epilogue) {
  launch_gemv_v03(w, x, y, batch, out_dim, in_dim, stream, epilogue);
}

#define NANOSERVE_INSTANTIATE_GEMV(T)                                                         \
  template void launch_gemv_v01<T>(const T*, const float*, float*, int, int, int,             \
                                   cudaStream_t, Epilogue);                                   \
  template void launch_gemv_v02<T>(const T*, const float*, float*, int, int, int,             \
                                   cudaStream_t, Epilogue);                                   \
  template void launch_gemv_v03<T>(const T*, const float*, float*, int, int, int,             \
                                   cudaStream_t, Epilogue);                                   \
  template void launch_gemv_version<T>(int, const T*, const float*, float*, int, int, int,    \
                                       cudaStream_t, Epilogue);                               \
  template void launch_gemv<T>(const T*, const float*, float*, int, int, int, cudaStream_t,   \
                               Epilogue);

NANOSERVE_INSTANTIATE_GEMV(float)
NANOSERVE_INSTANTIATE_GEMV(__half)
NANOSERVE_INSTANTIATE_GEMV(__nv_bfloat16)

#undef NANOSERVE_INSTANTIATE_GEMV

}  // namespace nanoserve
