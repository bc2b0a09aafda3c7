// main() of the tests that run under `mpirun -np N` (tests/ch09/mpi): every rank runs every
// test; a test passes when it passes on every rank, and the program's exit status is the same
// on every rank (a failure on any rank fails all of them, so mpirun reports it).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "common/dist/mpi_communicator.h"
#include "tests/ch09/mpi/mpi_test_support.h"

namespace nanoserve::testing {

dist::MpiCommunicator& world() {
  static dist::MpiCommunicator comm;
  return comm;
}

}  // namespace nanoserve::testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  nanoserve::dist::MpiCommunicator& comm = nanoserve::testing::world();
  // Only rank 0 prints the test log (the others print their failures).
  if (comm.rank() != 0) {
    ::testing::TestEventListeners& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  if (::testing::UnitTest::GetInstance()->failed_test_count() > 0 && comm.rank() != 0) {
    std::fprintf(stderr, "rank %d: %d test(s) failed\n", comm.rank(),
                 ::testing::UnitTest::GetInstance()->failed_test_count());
  }
  std::vector<int> flag{failed};
  comm.all_reduce(flag.data(), 1, nanoserve::dist::DataType::kI32, nanoserve::dist::ReduceOp::kMax,
                  nullptr);
  return flag[0];
}
