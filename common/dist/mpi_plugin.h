#pragma once
/// \file
/// \brief The MPI communicator loaded at run time: `libnanoserve_mpi.so`, a plugin built only
/// where Open MPI is found (common/dist/mpi_plugin.cpp: `MpiCommunicator` behind one factory
/// function), opened with `dlopen` by a program that must also start on machines without Open
/// MPI — `nanoserve --tensor-parallel N`. Such a program links no MPI library: without the
/// plugin, or without the libmpi it needs, only `--tensor-parallel` fails, with a clear error.
///
///     nanoserve ──dlopen──► libnanoserve_mpi.so ──► libmpi.so.40 (Open MPI)
///         │                  nanoserve_make_mpi_communicator() → new MpiCommunicator
///         └── every other symbol the plugin needs (the simulator's cudart, the communicator's
///             base) is the program's own: it exports them (ENABLE_EXPORTS); in the cuda build
///             the plugin links the shared CUDA runtime (the static one's symbols are hidden)
///
/// Where it is looked for: `$NANOSERVE_MPI_PLUGIN` when set, else next to the running
/// executable (the build puts it next to `nanoserve`).

#include <memory>
#include <string>

#include "common/dist/communicator.h"

namespace nanoserve::dist {

/// \brief The plugin's file name.
inline constexpr const char* kMpiPluginFile = "libnanoserve_mpi.so";
/// \brief The plugin's one entry point, `extern "C"`: `Communicator* ()`, a new
/// `MpiCommunicator` (owned by the caller); throws `CommError` when MPI cannot start.
inline constexpr const char* kMpiPluginFactory = "nanoserve_make_mpi_communicator";
/// \brief The entry point's type.
using MpiPluginFactory = Communicator* (*)();

/// \brief Where `load_mpi_communicator` looks for the plugin: `$NANOSERVE_MPI_PLUGIN` when set
/// and not empty, else `kMpiPluginFile` in the directory of the running executable.
std::string mpi_plugin_path();

/// \brief Opens the plugin at `mpi_plugin_path()` (once per process; it stays loaded) and makes
/// the communicator of every rank of the run (`MpiCommunicator`). Throws `Error` naming the
/// path and the loader's reason (file missing, libmpi missing, no entry point) when it cannot
/// be opened, `CommError` when MPI cannot start. Tested through `nanoserve generate
/// --tensor-parallel` (tests/ch09/ch09.cmake).
std::unique_ptr<Communicator> load_mpi_communicator();

}  // namespace nanoserve::dist
