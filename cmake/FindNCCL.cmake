# FindNCCL: NVIDIA's collective communication library, which is not a Debian package. Looks, in
# order, in NCCL_ROOT (CMake or environment variable), NCCL_HOME, the CUDA toolkit, and the
# `nvidia/nccl` folder of a pip `nvidia-nccl-cu*` wheel inside a Python site-packages (PyTorch's
# dependency, where GPU machines usually have it).
#
# Defines NCCL_FOUND, NCCL_INCLUDE_DIR, NCCL_LIBRARY, NCCL_VERSION and the imported target
# NCCL::NCCL.
set(_nccl_hints "${NCCL_ROOT}" "$ENV{NCCL_ROOT}" "$ENV{NCCL_HOME}")
if(CUDAToolkit_LIBRARY_ROOT)
  list(APPEND _nccl_hints "${CUDAToolkit_LIBRARY_ROOT}")
endif()
if(CUDAToolkit_INCLUDE_DIRS)
  foreach(_dir IN LISTS CUDAToolkit_INCLUDE_DIRS)
    get_filename_component(_parent "${_dir}" DIRECTORY)
    list(APPEND _nccl_hints "${_parent}")
  endforeach()
endif()
file(GLOB _nccl_wheels LIST_DIRECTORIES true
     /usr/lib/python3*/site-packages/nvidia/nccl /usr/local/lib/python3*/site-packages/nvidia/nccl
     /usr/lib/python3*/dist-packages/nvidia/nccl /usr/local/lib/python3*/dist-packages/nvidia/nccl
     /opt/*/.venv/lib/python3*/site-packages/nvidia/nccl
     "$ENV{HOME}/.local/lib/python3*/site-packages/nvidia/nccl")
list(APPEND _nccl_hints ${_nccl_wheels} /usr/local/cuda)

find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${_nccl_hints} PATH_SUFFIXES include)
find_library(NCCL_LIBRARY NAMES nccl libnccl.so.2 HINTS ${_nccl_hints} PATH_SUFFIXES lib lib64)
if(NCCL_INCLUDE_DIR AND EXISTS "${NCCL_INCLUDE_DIR}/nccl.h")
  file(STRINGS "${NCCL_INCLUDE_DIR}/nccl.h" _nccl_lines REGEX "^#define NCCL_(MAJOR|MINOR|PATCH) ")
  foreach(_part MAJOR MINOR PATCH)
    string(REGEX REPLACE ".*#define NCCL_${_part} ([0-9]+).*" "\\1" _nccl_${_part} "${_nccl_lines}")
  endforeach()
  set(NCCL_VERSION "${_nccl_MAJOR}.${_nccl_MINOR}.${_nccl_PATCH}")
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(NCCL REQUIRED_VARS NCCL_LIBRARY NCCL_INCLUDE_DIR
                                  VERSION_VAR NCCL_VERSION)
if(NCCL_FOUND AND NOT TARGET NCCL::NCCL)
  add_library(NCCL::NCCL UNKNOWN IMPORTED)
  set_target_properties(NCCL::NCCL PROPERTIES IMPORTED_LOCATION "${NCCL_LIBRARY}"
                        INTERFACE_INCLUDE_DIRECTORIES "${NCCL_INCLUDE_DIR}")
endif()
mark_as_advanced(NCCL_INCLUDE_DIR NCCL_LIBRARY)
