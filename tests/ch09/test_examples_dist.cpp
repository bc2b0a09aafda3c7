// The examples of chapter 9's public types (\snippet sources), compiled and run: a program that
// is not started by mpirun is a run of one rank (MPI's singleton mode).
#include <gtest/gtest.h>

#include <vector>

#include "common/dist/mpi_communicator.h"
#include "kernels/device_buffer.h"

namespace nanoserve::dist {
namespace {

TEST(Ch09Examples, Communicator) {
  //! [Communicator]
  // Under `mpirun -np N` every rank runs this; alone, it is a run of one rank.
  MpiCommunicator comm;
  DeviceBuffer<float> partial(std::vector<float>{1.0f, 2.0f, float(comm.rank())});
  // Tensor parallelism: the partial sums of a row-parallel linear, added up on every rank.
  comm.all_reduce(partial.get(), 3, DataType::kF32, ReduceOp::kSum, /*stream=*/nullptr);
  const std::vector<float> sum = partial.to_host();  // {N, 2N, N(N-1)/2}
  //! [Communicator]
  EXPECT_EQ(comm.size(), 1);
  EXPECT_EQ(comm.backend(), "mpi");
  EXPECT_NE(comm.description().find("Open MPI"), std::string::npos) << comm.description();
  EXPECT_EQ(sum, (std::vector<float>{1.0f, 2.0f, 0.0f}));
}

}  // namespace
}  // namespace nanoserve::dist
