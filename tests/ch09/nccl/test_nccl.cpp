// NcclCommunicator on a GPU (cuda build with NCCL; label gpu, skipped without a device): a run of
// one rank — what scripts/gpu_check.sh runs on a lent GPU. Collectives over one rank are copies,
// so each result is known exactly.
#include <gtest/gtest.h>

#include <vector>

#include "common/dist/nccl_communicator.h"
#include "kernels/device_buffer.h"

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

}  // namespace
}  // namespace nanoserve::dist
