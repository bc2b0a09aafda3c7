// NcclCommunicator on a GPU (cuda build with NCCL; label gpu, skipped without a device): a run of
// one rank — what scripts/gpu_check.sh runs on a lent GPU. Collectives over one rank are copies,
// so each result is known exactly; and tensor parallelism at TP = 1 over NCCL (every collective
// of the scheme on the runner's stream) gives the whole model's greedy tokens.
#include <gtest/gtest.h>

#include <cstdio>
#include <vector>

#include "common/allclose.h"
#include "common/dist/nccl_communicator.h"
#include "common/loaders/synthetic_model.h"
#include "common/tolerances.h"
#include "kernels/device_buffer.h"
#include "tests/ch09/tensor_parallel_test_support.h"

namespace nanoserve::dist {
namespace {

bool have_gpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

TEST(Ch09Nccl, NcclCommunicator) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU";
  //! [NcclCommunicator]
  NcclCommunicator comm;  // one rank; with MPI: NcclCommunicator comm(mpi_communicator);
  cudaStream_t stream = nullptr;
  CUDA_CHECK(cudaStreamCreate(&stream));
  DeviceBuffer<float> x(std::vector<float>{1.5f, -2.0f, 3.0f});
  comm.all_reduce(x.get(), 3, DataType::kF32, ReduceOp::kSum, stream);  // enqueued
  comm.synchronize(stream);                                             // waited for
  //! [NcclCommunicator]
  EXPECT_EQ(x.to_host(), (std::vector<float>{1.5f, -2.0f, 3.0f}));
  EXPECT_EQ(comm.backend(), "nccl");
  EXPECT_NE(comm.description().find("NCCL 2."), std::string::npos) << comm.description();

  DeviceBuffer<__nv_bfloat16> h(std::vector<__nv_bfloat16>(4, __float2bfloat16(0.5f)));
  comm.all_reduce(h.get(), 4, DataType::kBF16, ReduceOp::kMax, stream);
  DeviceBuffer<int> g(2);
  DeviceBuffer<int> src(std::vector<int>{7, 8});
  comm.all_gather(src.get(), g.get(), 2, DataType::kI32, stream);
  comm.broadcast(src.get(), 2, DataType::kI32, 0, stream);
  comm.synchronize(stream);
  EXPECT_EQ(__bfloat162float(h.to_host()[3]), 0.5f);
  EXPECT_EQ(g.to_host(), (std::vector<int>{7, 8}));
  comm.send_message(0, 5, {1, 2});
  EXPECT_EQ(comm.wait_message(5).bytes, (std::vector<std::uint8_t>{1, 2}));
  EXPECT_THROW(comm.wait_message(5), CommError);
  CUDA_CHECK(cudaStreamDestroy(stream));
}

// Not yet run on a GPU (prepared for scripts/gpu_check.sh): the same check as
// tests/ch09/test_tensor_parallel_runner.cpp over MPI, with NCCL's all-reduce and all-gather
// enqueued on the runner's stream. Logits within the tensor-parallel tolerance rather than bit
// for bit: the GPU's kernels for a shard's one extra vocabulary row are not known to keep
// every dot product's order.
TEST(Ch09Nccl, TensorParallelAtOneRankGivesTheWholeModelsTokens) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU";
  NcclCommunicator comm;
  const Model model = make_synthetic_model("tiny");
  const std::vector<int> prompt{1, 45, 9, 300, 77, 12, 5};
  const testing::GreedyRun whole = testing::greedy_whole(model, prompt, 6);
  const testing::GreedyRun tp = testing::greedy_tensor_parallel(model, comm, prompt, 6);
  EXPECT_EQ(tp.tokens, whole.tokens);
  ASSERT_EQ(tp.logits.size(), whole.logits.size());
  for (std::size_t s = 0; s < whole.logits.size(); ++s) {
    const CloseResult r = allclose(tp.logits[s], whole.logits[s], tol::kTensorParallelFp32);
    EXPECT_TRUE(r.ok) << "step " << s << ": " << r.summary();
  }
  std::printf("[ nccl tp 1] max |dlogit| %.3g over 6 greedy steps\n",
              testing::max_logit_diff(tp, whole));
}

}  // namespace
}  // namespace nanoserve::dist
