#pragma once
/// \file
/// \brief CUDA's built-in variables and qualifiers for kernels compiled as C++ by the simulator.
///
/// The real CUDA headers (host-callable on CUDA 13 with g++) provide the types: `dim3`, `uint3`,
/// `cudaError_t`, `__half`, `__nv_bfloat16`, … They are included *first*, because what follows
/// redefines `__shared__`.
///
/// `threadIdx`, `blockIdx`, `blockDim` and `gridDim` are OS-thread-local variables (not macros, so
/// a struct member called `gridDim` elsewhere is unaffected). The scheduler rewrites `threadIdx`
/// at every switch between simulated threads; this is correct because a fiber never migrates to
/// another OS thread. A consequence worth knowing: a `thread_local` in helper code is shared by
/// all threads of a block, like `__shared__`.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#ifndef CUDART_VERSION
#error "kernels/sim needs the CUDA toolkit headers (cuda_runtime.h) on the include path"
#elif CUDART_VERSION < 12000
#error "kernels/sim relies on the host-callable __half/__nv_bfloat16 of CUDA >= 12 headers"
#endif

/// \brief Static shared memory: one copy per OS thread, i.e. per running block (and per template
/// instantiation, as with nvcc). Like on a GPU, it keeps the previous block's values. No
/// initializers on `__shared__` variables (docs/design.md, kernel rule 4).
///
/// Under ASan the simulator runs every block on one OS thread and maps `__shared__` to a plain
/// `static`, because ASan puts redzones around globals but not around `thread_local`s: that is
/// what lets the sanitizer build catch an overflow of a static shared array.
#undef __shared__
#if defined(NANOSERVE_ASAN)
#define __shared__ static
#else
#define __shared__ static thread_local
#endif

/// \brief Occupancy hints mean nothing on the CPU.
#define __launch_bounds__(...)

/// \brief Thread index within the block of the simulated thread that is running.
inline thread_local uint3 threadIdx{0, 0, 0};
/// \brief Index of the running block within the grid.
inline thread_local uint3 blockIdx{0, 0, 0};
/// \brief Dimensions of the running launch's blocks.
inline thread_local dim3 blockDim{1, 1, 1};
/// \brief Dimensions of the running launch's grid.
inline thread_local dim3 gridDim{1, 1, 1};
/// \brief Threads per warp (a run-time variable on a GPU; do not rely on it being constexpr).
inline constexpr int warpSize = 32;

namespace nanoserve::sim {

/// \brief Start of the running block's dynamic shared memory (see `NS_DYNAMIC_SHARED`).
///
/// Each block gets a fresh buffer of exactly the launch's `smem_bytes` (so ASan sees overruns),
/// filled with 0xFF bytes: uninitialized floats read as NaN.
inline thread_local unsigned char* tl_dynamic_smem = nullptr;

/// \brief A call site in kernel source, recorded by barriers and warp operations so that
/// mismatches and deadlocks can be described.
struct Site {
  const char* file;  ///< `__builtin_FILE()` at the call
  int line;          ///< `__builtin_LINE()` at the call
};

}  // namespace nanoserve::sim
