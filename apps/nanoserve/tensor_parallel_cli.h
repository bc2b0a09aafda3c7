#pragma once
// `--tensor-parallel N` of `nanoserve generate` and `serve` (chapter 9): the ranks of the run,
// through the MPI communicator loaded at run time (common/dist/mpi_plugin.h), so that nanoserve
// itself links no MPI and starts where Open MPI is missing. N = 1 is the one-device path and
// needs no MPI.
//
//   mpirun -np 2 nanoserve generate -m stories260K.bin --device gpu --tensor-parallel 2 -t 0

#include <functional>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "common/dist/communicator.h"

namespace nanoserve::cli {

/// \brief Adds `--tensor-parallel N` to `command`, storing N in `n` (1 to 64, default 1).
void add_tensor_parallel_flag(CLI::App& command, int& n);

/// \brief The ranks of `--tensor-parallel n` (n > 1), on `--device` `device`: the MPI
/// communicator from libnanoserve_mpi.so. Throws `InvalidArgument` unless `device` is "gpu"
/// and, on rank 0, when the run has another number of ranks than n (naming `mpirun -np n`);
/// `Error` when the plugin or Open MPI cannot be loaded (saying what is missing). On a rank
/// > 0 of a run with the wrong number of ranks it returns null: rank 0 reports, the others
/// exit quietly.
std::unique_ptr<dist::Communicator> join_ranks(int n, const std::string& device);

/// \brief Runs `body` on this rank of `comm` and returns its exit code. An exception on one
/// rank of several is printed as "nanoserve: rank R: error: …" and ends every rank
/// (`Communicator::abort`): the others would wait for this one; on one rank it propagates.
int on_every_rank(dist::Communicator& comm, const std::function<int()>& body);

}  // namespace nanoserve::cli
