#pragma once
// Shared by the tests that run under mpirun (tests/ch09/mpi).
#include "common/dist/mpi_communicator.h"

namespace nanoserve::testing {

/// The communicator of every rank of the run (made once, by main).
dist::MpiCommunicator& world();

}  // namespace nanoserve::testing
