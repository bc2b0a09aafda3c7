// dist_fault_probe: a run in which one rank fails, for the tests that a failure anywhere ends
// the whole run quickly with a clear message instead of hanging it (tests/ch09/ch09.cmake).
//
//   mpirun -np N dist_fault_probe die    rank 1 is killed (SIGKILL) in the middle of the all-reduces
//   mpirun -np N dist_fault_probe hang   rank 1 stops answering; the others' watchdog fires
//   mpirun -np N dist_fault_probe ok     nobody fails
//
// Every rank runs 5 all-reduces; a CommError is printed as "rank R: error: ..." and ends the run
// through MPI_Abort.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "common/dist/mpi_communicator.h"
#include "kernels/device_buffer.h"

int main(int argc, char** argv) {
  using namespace nanoserve;
  const std::string mode = argc > 1 ? argv[1] : "ok";
  if (mode != "die" && mode != "hang" && mode != "ok") {
    std::fprintf(stderr, "usage: dist_fault_probe die|hang|ok\n");
    return 2;
  }
  dist::MpiCommunicator comm;
  try {
    DeviceBuffer<float> buf(std::vector<float>(1000, 1.0f));
    for (int round = 0; round < 5; ++round) {
      if (round == 2 && comm.rank() == 1 && mode == "die") std::raise(SIGKILL);
      if (round == 2 && comm.rank() == 1 && mode == "hang") {
        std::this_thread::sleep_for(std::chrono::seconds(120));
      }
      comm.all_reduce(buf.get(), 1000, dist::DataType::kF32, dist::ReduceOp::kSum, nullptr);
    }
    std::printf("rank %d: 5 all-reduces done\n", comm.rank());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: error: %s\n", comm.rank(), e.what());
    std::fflush(stderr);
    comm.abort(1);
  }
  return 0;
}
