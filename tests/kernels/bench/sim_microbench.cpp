// Micro-benchmarks of the CUDA simulator on this CPU: what a fiber switch, a barrier, a warp
// shuffle, a tensor-core (WMMA) operation and a launch cost, and how long a 1024x1024 fp32 GEMV takes. These are CPU timings of
// the simulator, not GPU performance. `--quick` runs tiny sizes (a smoke test for ctest).
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <vector>

#include "kernels/cuda_compat.h"
#include "kernels/sim/fiber_pool.h"

namespace {

using Clock = std::chrono::steady_clock;

// Best of `repeats` runs, in seconds (the minimum filters out scheduling noise).
double best_seconds(int repeats, const std::function<void()>& run) {
  double best = 1e30;
  for (int r = 0; r < repeats; ++r) {
    const auto start = Clock::now();
    run();
    const double s = std::chrono::duration<double>(Clock::now() - start).count();
    if (s < best) best = s;
  }
  return best;
}

// --- fiber switch: ping-pong between the OS thread's stack and one worker -------------------

struct PingPong {
  nanoserve::sim::FiberPool* pool = nullptr;
};

void ping_pong_body(nanoserve::sim::Worker& self, void* user) {
  auto& pool = *static_cast<PingPong*>(user)->pool;
  while (!pool.shutting_down()) {
    pool.put_idle(self);
    pool.switch_to(self.context, pool.main_context());
  }
}

double switch_ns(int round_trips) {
  PingPong state;
  nanoserve::sim::FiberPool pool(&ping_pong_body, &state, 64 * 1024);
  state.pool = &pool;
  const double s = best_seconds(3, [&] {
    for (int i = 0; i < round_trips; ++i) {
      nanoserve::sim::Worker& w = pool.take_idle();
      pool.switch_to(pool.main_context(), w.context);
    }
  });
  return s * 1e9 / (2.0 * round_trips);
}

// --- kernels -------------------------------------------------------------------------------

__global__ void barrier_kernel(int iterations) {
  for (int i = 0; i < iterations; ++i) __syncthreads();
}

__global__ void shuffle_kernel(float* out, int iterations) {
  float v = static_cast<float>(threadIdx.x);
  for (int i = 0; i < iterations; ++i) v += __shfl_xor_sync(0xffffffffu, v, i & 31);
  out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}

__global__ void empty_kernel() {}

// One warp: `iterations` tensor-core ops (m16n16k16, fp16 in, fp32 accumulate) on 16x16 tiles
// at `tiles` (3 x 256 halves, 32-byte aligned); mode 0 times mma_sync, mode 1 load_matrix_sync.
__global__ void wmma_kernel(const __half* tiles, float* out, int iterations, int mode) {
  namespace wmma = nvcuda::wmma;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> b;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  wmma::load_matrix_sync(a, tiles, 16);
  wmma::load_matrix_sync(b, tiles + 256, 16);
  for (int i = 0; i < iterations; ++i) {
    if (mode == 0) {
      wmma::mma_sync(acc, a, b, acc);
    } else {
      wmma::load_matrix_sync(a, tiles + 256 * (i % 2), 16);
    }
  }
  wmma::store_matrix_sync(out, acc, 16, wmma::mem_row_major);
}

// W: (rows, cols) row-major, x: (cols,), y: (rows,); one thread per row.
__global__ void gemv_thread_per_row(const float* W, const float* x, float* y, int rows, int cols) {
  const int row = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (row >= rows) return;
  float acc = 0.0f;
  for (int j = 0; j < cols; ++j) acc += W[static_cast<long>(row) * cols + j] * x[j];
  y[row] = acc;
}

// Same shapes; one warp per row, lanes stride the row, then a shuffle reduction.
__global__ void gemv_warp_per_row(const float* W, const float* x, float* y, int rows, int cols) {
  const int row = static_cast<int>(blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32);
  const int lane = static_cast<int>(threadIdx.x % 32);
  if (row >= rows) return;
  float acc = 0.0f;
  for (int j = lane; j < cols; j += 32) acc += W[static_cast<long>(row) * cols + j] * x[j];
  for (int offset = 16; offset > 0; offset /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, offset);
  if (lane == 0) y[row] = acc;
}

void print_row(const char* what, double value, const char* unit) {
  std::printf("%-46s %10.2f %s\n", what, value, unit);
}

}  // namespace

int main(int argc, char** argv) {
  using nanoserve::launch;
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  const int scale = quick ? 1 : 100;
  std::printf("CUDA simulator micro-benchmarks (CPU timings, not GPU performance)\n");

  print_row("fiber switch", switch_ns(1000 * scale), "ns");

  print_row("launch, 1 block x 1 thread",
            best_seconds(3,
                         [&] {
                           for (int i = 0; i < 100 * scale; ++i) {
                             launch(empty_kernel, dim3(1), dim3(1), 0, nullptr);
                           }
                         }) *
                1e9 / (100.0 * scale),
            "ns");

  for (unsigned block : {32u, 256u, 1024u}) {
    const int iterations = 10 * scale;
    const double s = best_seconds(
        3, [&] { launch(barrier_kernel, dim3(1), dim3(block), 0, nullptr, iterations); });
    char label[64];
    std::snprintf(label, sizeof label, "__syncthreads per thread (block %u)", block);
    print_row(label, s * 1e9 / (static_cast<double>(iterations) * block), "ns");
  }

  {
    const int iterations = 10 * scale;
    float* out = nullptr;
    CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&out), 256 * sizeof(float)));
    const double s = best_seconds(
        3, [&] { launch(shuffle_kernel, dim3(1), dim3(256), 0, nullptr, out, iterations); });
    print_row("__shfl_xor_sync per lane (block 256)", s * 1e9 / (iterations * 256.0), "ns");
    CUDA_CHECK(cudaFree(out));
  }

  {
    const int iterations = 10 * scale;
    __half* tiles = nullptr;
    float* out = nullptr;
    CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&tiles), 512 * sizeof(__half)));
    CUDA_CHECK(cudaMemset(tiles, 0, 512 * sizeof(__half)));
    CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&out), 256 * sizeof(float)));
    const char* labels[] = {"wmma::mma_sync m16n16k16 fp16 (per warp op)",
                            "wmma::load_matrix_sync 16x16 fp16 (per warp op)"};
    for (int mode = 0; mode < 2; ++mode) {
      const double s = best_seconds(3, [&] {
        launch(wmma_kernel, dim3(1), dim3(32), 0, nullptr, tiles, out, iterations, mode);
      });
      print_row(labels[mode], s * 1e9 / iterations, "ns");
    }
    CUDA_CHECK(cudaFree(out));
    CUDA_CHECK(cudaFree(tiles));
  }

  {
    const int n = quick ? 128 : 1024;
    std::vector<float> host_w(static_cast<size_t>(n) * n), host_x(n);
    for (size_t i = 0; i < host_w.size(); ++i) host_w[i] = static_cast<float>(i % 7) - 3.0f;
    for (int i = 0; i < n; ++i) host_x[i] = static_cast<float>(i % 5) * 0.25f;
    float *w = nullptr, *x = nullptr, *y = nullptr;
    CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&w), host_w.size() * sizeof(float)));
    CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&x), n * sizeof(float)));
    CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&y), n * sizeof(float)));
    CUDA_CHECK(cudaMemcpy(w, host_w.data(), host_w.size() * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(x, host_x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    char label[64];
    std::snprintf(label, sizeof label, "GEMV %dx%d fp32, thread per row", n, n);
    print_row(label,
              best_seconds(5,
                           [&] {
                             launch(gemv_thread_per_row, dim3((n + 255) / 256), dim3(256), 0,
                                    nullptr, w, x, y, n, n);
                           }) *
                  1e3,
              "ms");
    std::snprintf(label, sizeof label, "GEMV %dx%d fp32, warp per row + shuffles", n, n);
    print_row(label,
              best_seconds(5,
                           [&] {
                             launch(gemv_warp_per_row, dim3((n + 7) / 8), dim3(256), 0, nullptr, w,
                                    x, y, n, n);
                           }) *
                  1e3,
              "ms");
    CUDA_CHECK(cudaFree(w));
    CUDA_CHECK(cudaFree(x));
    CUDA_CHECK(cudaFree(y));
  }

  {  // CUDA graphs: 8 captured launches replayed, against the same 8 launched directly
    constexpr int kLaunches = 8;
    const int replays = 50 * scale;
    cudaStream_t stream = nullptr;
    CUDA_CHECK(cudaStreamCreate(&stream));
    const auto direct = [&] {
      for (int i = 0; i < kLaunches; ++i) launch(empty_kernel, dim3(1), dim3(32), 0, stream);
    };
    cudaGraph_t graph = nullptr;
    CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    direct();
    CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
    cudaGraphExec_t exec = nullptr;
    CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    const double per = 1e9 / (static_cast<double>(replays) * kLaunches);
    print_row("8 launches (1x32) directly, per launch",
              best_seconds(3, [&] { for (int r = 0; r < replays; ++r) direct(); }) * per, "ns");
    print_row("the same 8 as a graph replay, per launch",
              best_seconds(3,
                           [&] {
                             for (int r = 0; r < replays; ++r) {
                               CUDA_CHECK(cudaGraphLaunch(exec, stream));
                             }
                           }) *
                  per,
              "ns");
    CUDA_CHECK(cudaGraphExecDestroy(exec));
    CUDA_CHECK(cudaGraphDestroy(graph));
    CUDA_CHECK(cudaStreamDestroy(stream));
  }
  return 0;
}
