# Every dependency comes from a Debian package installed by scripts/bootstrap.sh.
find_package(Eigen3 3.4 REQUIRED NO_MODULE)
find_package(CLI11 REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(Threads REQUIRED)
if(NANOSERVE_BUILD_TESTS)
  find_package(GTest REQUIRED)
  include(GoogleTest)
endif()
if(NANOSERVE_BACKEND STREQUAL "sim")
  find_package(Boost 1.74 REQUIRED COMPONENTS context)
  # The simulator compiles kernels against the real CUDA headers (dim3, __half, __nv_bfloat16,
  # the runtime API it defines): headers only, no nvcc, no GPU, no libcudart.
  find_package(CUDAToolkit QUIET)
  find_path(NANOSERVE_CUDA_INCLUDE_DIR NAMES cuda_runtime.h cuda_fp16.h
            HINTS ${CUDAToolkit_INCLUDE_DIRS} "$ENV{CUDA_HOME}/include" "$ENV{CUDA_PATH}/include"
            PATHS /usr/local/cuda/include /opt/cuda/include
            DOC "CUDA toolkit include directory (cuda_runtime.h) for the simulator")
  if(NOT NANOSERVE_CUDA_INCLUDE_DIR)
    message(FATAL_ERROR "The sim backend needs the CUDA toolkit headers (cuda_runtime.h, "
                        "cuda_fp16.h); install the toolkit or pass -DNANOSERVE_CUDA_INCLUDE_DIR=...")
  endif()
elseif(NANOSERVE_BACKEND STREQUAL "cuda")
  find_package(CUDAToolkit REQUIRED)
endif()

# xxHash (libxxhash-dev) ships neither a CMake config nor a module: find it by hand.
find_path(XXHASH_INCLUDE_DIR xxhash.h REQUIRED)
# The cuda build links it statically so that its binaries run on a GPU machine without it.
if(NANOSERVE_BACKEND STREQUAL "cuda")
  find_library(XXHASH_LIBRARY NAMES libxxhash.a xxhash REQUIRED)
else()
  find_library(XXHASH_LIBRARY NAMES xxhash REQUIRED)
endif()
add_library(xxhash::xxhash UNKNOWN IMPORTED)
set_target_properties(xxhash::xxhash PROPERTIES
  IMPORTED_LOCATION "${XXHASH_LIBRARY}"
  INTERFACE_INCLUDE_DIRECTORIES "${XXHASH_INCLUDE_DIR}")

# PCRE2 (libpcre2-dev: the regex pre-tokenizers of byte-level BPE) and utf8proc
# (libutf8proc-dev: NFC normalization), found by pkg-config; the cuda build links both
# statically, like xxHash.
find_package(PkgConfig REQUIRED)
pkg_check_modules(PCRE2 REQUIRED libpcre2-8)
pkg_check_modules(UTF8PROC REQUIRED libutf8proc)
if(NANOSERVE_BACKEND STREQUAL "cuda")
  find_library(PCRE2_LIBRARY NAMES libpcre2-8.a REQUIRED HINTS ${PCRE2_LIBRARY_DIRS})
  find_library(UTF8PROC_LIBRARY NAMES libutf8proc.a REQUIRED HINTS ${UTF8PROC_LIBRARY_DIRS})
else()
  find_library(PCRE2_LIBRARY NAMES pcre2-8 REQUIRED HINTS ${PCRE2_LIBRARY_DIRS})
  find_library(UTF8PROC_LIBRARY NAMES utf8proc REQUIRED HINTS ${UTF8PROC_LIBRARY_DIRS})
endif()
add_library(nanoserve::unicode INTERFACE IMPORTED)
set_target_properties(nanoserve::unicode PROPERTIES
  INTERFACE_LINK_LIBRARIES "${PCRE2_LIBRARY};${UTF8PROC_LIBRARY}"
  INTERFACE_INCLUDE_DIRECTORIES "${PCRE2_INCLUDE_DIRS};${UTF8PROC_INCLUDE_DIRS}")

# Open MPI (libopenmpi-dev, openmpi-bin): the ranks of chapter 9's distributed runs. Without it
# the MPI communicator, chapter 9 and its tests are not built (and CMake says so).
set(MPI_CXX_SKIP_MPICXX ON)  # the C API only (the C++ bindings were removed from MPI 3)
find_package(MPI COMPONENTS CXX)
if(NOT MPI_CXX_FOUND)
  message(STATUS "MPI not found (apt-get install libopenmpi-dev openmpi-bin): chapter 9 is skipped")
endif()
# NCCL (cuda build): not a Debian package; cmake/FindNCCL.cmake looks where it is installed.
if(NANOSERVE_BACKEND STREQUAL "cuda")
  find_package(NCCL)
endif()

find_package(Doxygen OPTIONAL_COMPONENTS dot)
find_package(Git QUIET)
