#pragma once
/// \file
/// \brief The CUDA simulator as kernel code sees it (included by kernels/cuda_compat.h when the
/// kernels are compiled as C++): built-in variables, barriers, warp intrinsics, atomics, device
/// math, host versions of device-only half math, tensor cores (`nvcuda::wmma`), and the launch
/// entry point.
///
/// Deliberately light: no Boost, no scheduler — those live in the simulator's .cpp files, so a
/// kernel file compiles about as fast as a plain C++ file.

#include "kernels/sim/active_mask.h"
#include "kernels/sim/atomics.h"
#include "kernels/sim/builtins.h"
#include "kernels/sim/cooperative_groups.h"
#include "kernels/sim/device_math.h"
#include "kernels/sim/half_math.h"
#include "kernels/sim/launch.h"
#include "kernels/sim/pipeline.h"
#include "kernels/sim/sync_ops.h"
#include "kernels/sim/warp_ops.h"
#include "kernels/sim/wmma.h"
