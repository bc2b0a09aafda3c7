// libnanoserve_mpi.so's one entry point (common/dist/mpi_plugin.h): the MPI communicator for a
// program that opens this plugin at run time instead of linking Open MPI.
#include "common/dist/mpi_communicator.h"
#include "common/dist/mpi_plugin.h"

extern "C" __attribute__((visibility("default"))) nanoserve::dist::Communicator*
nanoserve_make_mpi_communicator() {
  return new nanoserve::dist::MpiCommunicator();
}
