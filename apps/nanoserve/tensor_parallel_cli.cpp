#include "apps/nanoserve/tensor_parallel_cli.h"

#include <cstdio>

#include "common/dist/mpi_plugin.h"
#include "common/error.h"

namespace nanoserve::cli {

void add_tensor_parallel_flag(CLI::App& command, int& n) {
  command.add_option("--tensor-parallel", n,
                     "split the model across N ranks (Megatron's tensor parallelism; --device "
                     "gpu; run under mpirun -np N; needs Open MPI: libnanoserve_mpi.so next to "
                     "nanoserve). 1 = one device, no MPI")
      ->capture_default_str()->check(CLI::Range(1, 64));
}

std::unique_ptr<dist::Communicator> join_ranks(int n, const std::string& device) {
  const std::string flag = "--tensor-parallel " + std::to_string(n);
  if (device != "gpu") {
    throw InvalidArgument(flag + " splits the kernels' model across ranks: it needs --device gpu "
                          "(the CPU oracle runs one process)");
  }
  std::unique_ptr<dist::Communicator> comm;
  try {
    comm = dist::load_mpi_communicator();
  } catch (const dist::CommError&) {
    throw;
  } catch (const Error& e) {
    throw Error(flag + " needs Open MPI: " + e.what() + " (the plugin is built with nanoserve "
                "where Open MPI is installed: apt-get install libopenmpi-dev openmpi-bin); then "
                "run under mpirun -np " + std::to_string(n));
  }
  if (comm->size() != n) {
    if (comm->rank() != 0) return nullptr;
    throw InvalidArgument(flag + " needs as many ranks: run under mpirun -np " +
                          std::to_string(n) + " (this run has " + std::to_string(comm->size()) +
                          ")");
  }
  return comm;
}

int on_every_rank(dist::Communicator& comm, const std::function<int()>& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    if (comm.size() == 1) throw;
    std::fprintf(stderr, "nanoserve: rank %d: error: %s\n", comm.rank(), e.what());
    std::fflush(stderr);
    comm.abort(1);
  }
  return 1;  // not reached: abort ends the process
}

}  // namespace nanoserve::cli
