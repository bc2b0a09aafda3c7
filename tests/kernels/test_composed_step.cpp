// A decode step as a kernel author writes one for a GPU, run on the simulator (and, compiled by
// nvcc, on a GPU): a tensor-core projection whose W and x tiles stream into shared memory through
// a double-buffered __pipeline_memcpy_async loop, a greedy argmax, and the whole step — upload of
// the step's inputs, both kernels, download of the tokens — captured once as a CUDA graph and
// replayed with new inputs. Each replay is checked against the oracle (fp32 on the same __half
// values), so a broken WMMA, async copy or graph replay fails here.
#include <cstddef>
#include <vector>

#include "tests/kernels/kernel_test_support.h"

namespace nanoserve {
namespace {

using ComposedStep = testing::DeviceTest;

constexpr int kRows = 16;  // the batch (decode rows), one WMMA tile tall
constexpr int kK = 64;     // input features: four 16-wide k steps
constexpr int kN = 48;     // output features: three warps of 16 columns

// logits(kRows, kN) = x(kRows, kK) · W(kN, kK)ᵀ. One warp per 16 output columns; each k step's
// 16×16 tiles of x and W (512 bytes each) arrive by one 16-byte async copy per lane, into the
// buffer not being read, while the previous step's tiles are multiplied.
__global__ void tc_projection(const __half* x, const __half* w, float* logits) {
  namespace wmma = nvcuda::wmma;
  __shared__ __align__(32) __half xs[2][3][16 * 16];  // [buffer][warp][tile]
  __shared__ __align__(32) __half ws[2][3][16 * 16];
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int col0 = warp * 16;
  // Lane l copies row l / 2, halves 8·(l % 2) .. +8, of both tiles of k step `s` into `buf`.
  auto stage = [&](int s, int buf) {
    const int r = lane / 2, c = 8 * (lane % 2);
    __pipeline_memcpy_async(&xs[buf][warp][r * 16 + c], &x[r * kK + s * 16 + c], 16);
    __pipeline_memcpy_async(&ws[buf][warp][r * 16 + c], &w[(col0 + r) * kK + s * 16 + c], 16);
    __pipeline_commit();
  };
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> b;  // Wᵀ: W rows
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  constexpr int kSteps = kK / 16;
  stage(0, 0);
  for (int s = 0; s < kSteps; ++s) {
    if (s + 1 < kSteps) {
      stage(s + 1, (s + 1) % 2);
      __pipeline_wait_prior(1);  // step s has landed; s + 1 may still be in flight
    } else {
      __pipeline_wait_prior(0);
    }
    __syncwarp();  // every lane's copies of step s are visible to the whole warp
    wmma::load_matrix_sync(a, xs[s % 2][warp], 16);
    wmma::load_matrix_sync(b, ws[s % 2][warp], 16);
    wmma::mma_sync(acc, a, b, acc);
    __syncwarp();  // nobody overwrites this buffer (at step s + 2) before all lanes loaded it
  }
  wmma::store_matrix_sync(logits + col0, acc, kN, wmma::mem_row_major);
}

// tokens[r] = argmax over the row (lowest id among equal maxima): one warp per row.
__global__ void greedy(const float* logits, int* tokens) {
  const int r = static_cast<int>(blockIdx.x);
  const int lane = static_cast<int>(threadIdx.x);
  float best = -1e30f;
  int id = kN;
  for (int j = lane; j < kN; j += 32) {
    const float v = logits[r * kN + j];
    if (v > best) best = v, id = j;
  }
  for (int off = 16; off > 0; off /= 2) {
    const float ob = __shfl_down_sync(0xffffffffu, best, off);
    const int oid = __shfl_down_sync(0xffffffffu, id, off);
    if (ob > best || (ob == best && oid < id)) best = ob, id = oid;
  }
  if (lane == 0) tokens[r] = id;
}

template <typename T>
struct Pinned {
  T* data = nullptr;
  explicit Pinned(std::size_t n) {
    CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&data), n * sizeof(T)));
  }
  ~Pinned() { cudaFreeHost(data); }
  Pinned(const Pinned&) = delete;
  Pinned& operator=(const Pinned&) = delete;
};

// Deterministic values in [-1, 1) on a 1/64 grid (exact in __half).
float value(unsigned i, unsigned seed) {
  const unsigned h = (i * 2654435761u) ^ (seed * 40503u + 17u);
  return static_cast<float>(static_cast<int>((h >> 7) % 128u) - 64) / 64.0f;
}

TEST_F(ComposedStep, AGraphOfATensorCoreProjectionAndArgmaxReplaysLikeTheOracle) {
  std::vector<__half> host_w(static_cast<std::size_t>(kN) * kK);
  for (std::size_t i = 0; i < host_w.size(); ++i) {
    host_w[i] = __float2half(value(static_cast<unsigned>(i), 99));
  }
  DeviceBuffer<__half> w(host_w), x(static_cast<std::size_t>(kRows) * kK);
  DeviceBuffer<float> logits(static_cast<std::size_t>(kRows) * kN);
  DeviceBuffer<int> tokens(kRows);
  Pinned<__half> host_x(static_cast<std::size_t>(kRows) * kK);
  Pinned<float> host_logits(static_cast<std::size_t>(kRows) * kN);
  Pinned<int> host_tokens(kRows);

  cudaStream_t stream = nullptr;
  CUDA_CHECK(cudaStreamCreate(&stream));
  CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  CUDA_CHECK(cudaMemcpyAsync(x.get(), host_x.data, x.size() * sizeof(__half),
                             cudaMemcpyHostToDevice, stream));
  launch(tc_projection, dim3(1), dim3(96), 0, stream, static_cast<const __half*>(x.get()),
         static_cast<const __half*>(w.get()), logits.get());
  launch(greedy, dim3(kRows), dim3(32), 0, stream, static_cast<const float*>(logits.get()),
         tokens.get());
  CUDA_CHECK(cudaMemcpyAsync(host_logits.data, logits.get(), logits.size() * sizeof(float),
                             cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaMemcpyAsync(host_tokens.data, tokens.get(), kRows * sizeof(int),
                             cudaMemcpyDeviceToHost, stream));
  cudaGraph_t graph = nullptr;
  CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec = nullptr;
  CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));

  for (unsigned step = 0; step < 3; ++step) {  // new inputs in the pinned buffer every step
    for (int i = 0; i < kRows * kK; ++i) {
      host_x.data[i] = __float2half(value(static_cast<unsigned>(i), step));
    }
    CUDA_CHECK(cudaGraphLaunch(exec, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
    for (int r = 0; r < kRows; ++r) {
      std::vector<float> want(kN), got(host_logits.data + r * kN, host_logits.data + (r + 1) * kN);
      int want_token = 0;
      for (int j = 0; j < kN; ++j) {
        float sum = 0.0f;
        for (int k = 0; k < kK; ++k) {
          sum += __half2float(host_x.data[r * kK + k]) * __half2float(host_w[j * kK + k]);
        }
        want[j] = sum;
        if (sum > want[want_token]) want_token = j;
      }
      // The products and sums of these 1/64-grid values are exact in fp32: any order agrees.
      EXPECT_EQ(got, want) << "step " << step << " row " << r;
      EXPECT_EQ(host_tokens.data[r], want_token) << "step " << step << " row " << r;
    }
  }
  CUDA_CHECK(cudaGraphExecDestroy(exec));
  CUDA_CHECK(cudaGraphDestroy(graph));
  CUDA_CHECK(cudaStreamDestroy(stream));
}

}  // namespace
}  // namespace nanoserve
