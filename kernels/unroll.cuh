#pragma once
/// \file
/// \brief `NS_UNROLL`: `#pragma unroll` for nvcc, nothing for the simulator's g++ (which does
/// not know the pragma and, built with -Werror, rejects unknown ones). Put it on the line
/// before a loop with a compile-time trip count whose body indexes register arrays: unrolled,
/// those arrays stay in registers instead of spilling to local memory.

#include "kernels/cuda_compat.h"

#if NANOSERVE_REAL_CUDA
/// \brief Fully unroll the next loop (nvcc).
#define NS_UNROLL _Pragma("unroll")
#else
/// \brief No-op in the simulator: g++ -O2 decides on its own.
#define NS_UNROLL
#endif
