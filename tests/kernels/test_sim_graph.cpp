// CUDA graphs: a stream capture of launches and copies replays with the arguments captured by
// value, reads the current host inputs on every replay, and can be updated in place; calls CUDA
// forbids during a capture fail with its error codes and invalidate the capture. Runs on the
// simulator and, compiled by nvcc, on a GPU (the explanations are checked in the simulator only).
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "tests/kernels/kernel_test_support.h"

namespace nanoserve {
namespace {

using Graphs = testing::DeviceTest;

constexpr int kN = 300;  // not a multiple of the block size

__global__ void axpy(float* y, const float* x, float a, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) y[i] = a * x[i] + y[i];
}

__global__ void add_scalar(float* y, float b, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) y[i] += b;
}

// Pinned host memory, as real graph memcpy nodes want it.
struct PinnedFloats {
  float* data = nullptr;
  explicit PinnedFloats(int n) {
    CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&data), n * sizeof(float)));
  }
  ~PinnedFloats() { cudaFreeHost(data); }
  PinnedFloats(const PinnedFloats&) = delete;
  PinnedFloats& operator=(const PinnedFloats&) = delete;
};

struct Stream {
  cudaStream_t s = nullptr;
  Stream() { CUDA_CHECK(cudaStreamCreate(&s)); }
  ~Stream() { cudaStreamDestroy(s); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
};

// Records: x <- host_x; y = 0; y = a*x + y; y += b; host_y <- y.
cudaGraph_t capture_step(cudaStream_t stream, float* x, float* y, const float* host_x,
                         float* host_y, float a, float b) {
  const dim3 grid((kN + 127) / 128), block(128);
  CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  CUDA_CHECK(cudaMemcpyAsync(x, host_x, kN * sizeof(float), cudaMemcpyHostToDevice, stream));
  CUDA_CHECK(cudaMemsetAsync(y, 0, kN * sizeof(float), stream));
  launch(axpy, grid, block, 0, stream, y, static_cast<const float*>(x), a, kN);
  launch(add_scalar, grid, block, 0, stream, y, b, kN);
  CUDA_CHECK(cudaMemcpyAsync(host_y, y, kN * sizeof(float), cudaMemcpyDeviceToHost, stream));
  cudaGraph_t graph = nullptr;
  CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  return graph;
}

// Checks host_y == a*host_x + b exactly (small integers: no rounding).
void expect_step(const float* host_x, const float* host_y, float a, float b) {
  for (int i = 0; i < kN; ++i) {
    ASSERT_EQ(host_y[i], a * host_x[i] + b) << "i=" << i;
  }
}

TEST_F(Graphs, ReplaysCapturedLaunchesAndCopiesWithArgumentsCapturedByValue) {
  Stream stream;
  DeviceBuffer<float> x(kN), y(kN);
  PinnedFloats host_x(kN), host_y(kN);
  for (int i = 0; i < kN; ++i) host_x.data[i] = static_cast<float>(i);
  for (int i = 0; i < kN; ++i) host_y.data[i] = -7.0f;
  float a = 2.0f;
  cudaGraph_t graph = capture_step(stream.s, x.get(), y.get(), host_x.data, host_y.data, a, 1.0f);
  a = 100.0f;  // captured by value: the graph keeps 2
  // Nothing ran during the capture.
  for (int i = 0; i < kN; ++i) ASSERT_EQ(host_y.data[i], -7.0f);
  size_t nodes = 0;
  CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &nodes));
  EXPECT_EQ(nodes, 5u);

  cudaGraphExec_t exec = nullptr;
  CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (int replay = 0; replay < 3; ++replay) {
    // The copy node reads the host buffer as it is at replay time.
    for (int i = 0; i < kN; ++i) host_x.data[i] = static_cast<float>((i * (replay + 3)) % 17 - 8);
    CUDA_CHECK(cudaGraphLaunch(exec, stream.s));
    CUDA_CHECK(cudaStreamSynchronize(stream.s));
    expect_step(host_x.data, host_y.data, 2.0f, 1.0f);
  }

  // Same topology, other scalars: updated in place.
  cudaGraph_t graph2 =
      capture_step(stream.s, x.get(), y.get(), host_x.data, host_y.data, -3.0f, 0.5f);
  cudaGraphExecUpdateResultInfo info{};
  CUDA_CHECK(cudaGraphExecUpdate(exec, graph2, &info));
  EXPECT_EQ(info.result, cudaGraphExecUpdateSuccess);
  CUDA_CHECK(cudaGraphDestroy(graph2));
  CUDA_CHECK(cudaGraphDestroy(graph));  // the executable graph does not need the graph
  for (int i = 0; i < kN; ++i) host_x.data[i] = static_cast<float>(i % 5);
  CUDA_CHECK(cudaGraphLaunch(exec, stream.s));
  CUDA_CHECK(cudaStreamSynchronize(stream.s));
  expect_step(host_x.data, host_y.data, -3.0f, 0.5f);
  CUDA_CHECK(cudaGraphExecDestroy(exec));
}

TEST_F(Graphs, UpdateWithAnotherTopologyFailsAndKeepsTheOldGraph) {
  Stream stream;
  DeviceBuffer<float> x(kN), y(kN);
  PinnedFloats host_x(kN), host_y(kN);
  for (int i = 0; i < kN; ++i) host_x.data[i] = static_cast<float>(i % 9);
  cudaGraph_t graph =
      capture_step(stream.s, x.get(), y.get(), host_x.data, host_y.data, 4.0f, 0.0f);
  cudaGraphExec_t exec = nullptr;
  CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));

  cudaGraph_t shorter = nullptr;  // one launch only
  CUDA_CHECK(cudaStreamBeginCapture(stream.s, cudaStreamCaptureModeGlobal));
  launch(add_scalar, dim3(3), dim3(128), 0, stream.s, y.get(), 1.0f, kN);
  CUDA_CHECK(cudaStreamEndCapture(stream.s, &shorter));
  cudaGraphExecUpdateResultInfo info{};
  EXPECT_EQ(cudaGraphExecUpdate(exec, shorter, &info), cudaErrorGraphExecUpdateFailure);
  EXPECT_EQ(info.result, cudaGraphExecUpdateErrorTopologyChanged);
#if !NANOSERVE_REAL_CUDA
  EXPECT_NE(sim::last_error_detail().find("nodes"), std::string::npos) << sim::last_error_detail();
#endif
  cudaGetLastError();
  CUDA_CHECK(cudaGraphLaunch(exec, stream.s));  // still the original four-scalar graph
  CUDA_CHECK(cudaStreamSynchronize(stream.s));
  expect_step(host_x.data, host_y.data, 4.0f, 0.0f);
  CUDA_CHECK(cudaGraphDestroy(shorter));
  CUDA_CHECK(cudaGraphDestroy(graph));
  CUDA_CHECK(cudaGraphExecDestroy(exec));
}

// Begins a capture on `stream`, runs `illegal`, expects `code` from it, then expects the
// capture to be invalidated: cudaStreamEndCapture fails and yields no graph.
void expect_invalidates_capture(cudaStream_t stream, cudaError_t code,
                                const std::function<cudaError_t()>& illegal,
                                const std::string& fragment) {
  CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  const cudaError_t got = illegal();
  EXPECT_EQ(got, code) << cudaGetErrorName(got);
#if !NANOSERVE_REAL_CUDA
  EXPECT_NE(sim::last_error_detail().find(fragment), std::string::npos) << sim::last_error_detail();
#else
  (void)fragment;
#endif
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  EXPECT_EQ(cudaStreamIsCapturing(stream, &status), cudaSuccess);
  EXPECT_EQ(status, cudaStreamCaptureStatusInvalidated);
  cudaGraph_t graph = reinterpret_cast<cudaGraph_t>(&status);
  EXPECT_EQ(cudaStreamEndCapture(stream, &graph), cudaErrorStreamCaptureInvalidated);
  EXPECT_EQ(graph, nullptr);
  cudaGetLastError();  // clear, so the next test starts clean
  status = cudaStreamCaptureStatusActive;
  EXPECT_EQ(cudaStreamIsCapturing(stream, &status), cudaSuccess);
  EXPECT_EQ(status, cudaStreamCaptureStatusNone);
}

TEST_F(Graphs, CallsIllegalDuringCaptureFailAndInvalidateIt) {
  Stream stream;
  DeviceBuffer<float> y(kN);
  std::vector<float> host(kN, 1.0f);
  void* p = nullptr;
  expect_invalidates_capture(
      stream.s, cudaErrorStreamCaptureUnsupported, [&] { return cudaMalloc(&p, 64); },
      "cudaMalloc");
  EXPECT_EQ(p, nullptr);
  expect_invalidates_capture(
      stream.s, cudaErrorStreamCaptureUnsupported, [&] { return cudaStreamSynchronize(stream.s); },
      "cudaStreamSynchronize");
  expect_invalidates_capture(
      stream.s, cudaErrorStreamCaptureUnsupported, [&] { return cudaDeviceSynchronize(); },
      "cudaDeviceSynchronize");
  // Synchronous copies use the legacy stream, which would wait for the capturing stream.
  expect_invalidates_capture(
      stream.s, cudaErrorStreamCaptureImplicit,
      [&] { return cudaMemcpy(y.get(), host.data(), kN * sizeof(float), cudaMemcpyHostToDevice); },
      "legacy default stream");
  // So does a launch on the legacy stream.
  expect_invalidates_capture(
      stream.s, cudaErrorStreamCaptureImplicit,
      [&] {
        try {
          launch(add_scalar, dim3(3), dim3(128), 0, nullptr, y.get(), 1.0f, kN);
        } catch (const CudaError& e) {
          return e.code();
        }
        return cudaSuccess;
      },
      "legacy default stream");
  // After all that, the runtime works normally again.
  CUDA_CHECK(cudaMemcpy(y.get(), host.data(), kN * sizeof(float), cudaMemcpyHostToDevice));
  launch(add_scalar, dim3(3), dim3(128), 0, stream.s, y.get(), 2.0f, kN);
  CUDA_CHECK(cudaStreamSynchronize(stream.s));
  EXPECT_EQ(y.to_host(), std::vector<float>(kN, 3.0f));
}

TEST_F(Graphs, OperationsAfterAnInvalidationFailUntilTheCaptureEnds) {
  Stream stream;
  DeviceBuffer<float> y(kN);
  CUDA_CHECK(cudaStreamBeginCapture(stream.s, cudaStreamCaptureModeGlobal));
  EXPECT_EQ(cudaStreamSynchronize(stream.s), cudaErrorStreamCaptureUnsupported);
  EXPECT_EQ(cudaMemsetAsync(y.get(), 0, kN * sizeof(float), stream.s),
            cudaErrorStreamCaptureInvalidated);
  cudaGraph_t graph = nullptr;
  EXPECT_EQ(cudaStreamEndCapture(stream.s, &graph), cudaErrorStreamCaptureInvalidated);
  EXPECT_EQ(graph, nullptr);
  cudaGetLastError();
}

TEST_F(Graphs, TheLegacyDefaultStreamCannotBeCaptured) {
  EXPECT_EQ(cudaStreamBeginCapture(cudaStreamLegacy, cudaStreamCaptureModeGlobal),
            cudaErrorStreamCaptureUnsupported);
  cudaGetLastError();
  cudaGraph_t graph = nullptr;
  Stream stream;
  EXPECT_NE(cudaStreamEndCapture(stream.s, &graph), cudaSuccess);  // never began
  cudaGetLastError();
}

#if !NANOSERVE_REAL_CUDA  // on a GPU a destroyed handle is undefined behaviour
TEST_F(Graphs, DestroyedGraphsAreRejected) {
  Stream stream;
  DeviceBuffer<float> y(kN);
  cudaGraph_t graph = nullptr;
  CUDA_CHECK(cudaStreamBeginCapture(stream.s, cudaStreamCaptureModeGlobal));
  launch(add_scalar, dim3(3), dim3(128), 0, stream.s, y.get(), 1.0f, kN);
  CUDA_CHECK(cudaStreamEndCapture(stream.s, &graph));
  cudaGraphExec_t exec = nullptr;
  CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  CUDA_CHECK(cudaGraphDestroy(graph));
  EXPECT_EQ(cudaGraphDestroy(graph), cudaErrorInvalidValue);  // destroyed twice
  cudaGetLastError();
  CUDA_CHECK(cudaGraphExecDestroy(exec));
  EXPECT_EQ(cudaGraphLaunch(exec, stream.s), cudaErrorInvalidValue);  // destroyed exec
  cudaGetLastError();
}
#endif

}  // namespace
}  // namespace nanoserve
