#include "common/dist/mpi_plugin.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>

namespace nanoserve::dist {

std::string mpi_plugin_path() {
  if (const char* env = std::getenv("NANOSERVE_MPI_PLUGIN"); env != nullptr && *env != '\0') {
    return env;
  }
  std::string exe(4096, '\0');
  const ssize_t n = readlink("/proc/self/exe", exe.data(), exe.size() - 1);
  if (n <= 0) return kMpiPluginFile;  // the loader's own search (LD_LIBRARY_PATH, …)
  exe.resize(static_cast<std::size_t>(n));
  return exe.substr(0, exe.find_last_of('/') + 1) + kMpiPluginFile;
}

std::unique_ptr<Communicator> load_mpi_communicator() {
  static std::mutex mutex;
  static MpiPluginFactory factory = nullptr;
  const std::lock_guard<std::mutex> lock(mutex);
  if (factory == nullptr) {
    const std::string path = mpi_plugin_path();
    // RTLD_GLOBAL: Open MPI opens components of its own that look for libmpi's symbols.
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (handle == nullptr) {
      const char* why = dlerror();
      throw Error("cannot load the MPI plugin " + path + ": " + (why ? why : "unknown reason"));
    }
    factory = reinterpret_cast<MpiPluginFactory>(dlsym(handle, kMpiPluginFactory));
    if (factory == nullptr) {
      throw Error("the MPI plugin " + path + " has no entry point " + kMpiPluginFactory);
    }
  }
  return std::unique_ptr<Communicator>(factory());
}

}  // namespace nanoserve::dist
