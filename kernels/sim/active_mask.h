#pragma once
/// \file
/// \brief `__activemask()` for the simulator.
///
/// On a GPU it returns the lanes of the warp that are converged with the caller at that moment,
/// which the simulator cannot know without a rendezvous (and a rendezvous would deadlock in
/// divergent code). It returns the lanes of the caller's warp that exist (a partial last warp
/// has fewer): the mask a warp-wide operation in converged code may pass. Like on a GPU, use it
/// only to pass a mask on to a `_sync` intrinsic, which checks who really takes part.

#include "kernels/sim/builtins.h"

/// \brief The lanes of the caller's warp that exist (see the file comment).
inline unsigned __activemask() {
  const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
  const unsigned linear = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const unsigned first = linear / 32 * 32;
  const unsigned lanes = threads - first >= 32 ? 32 : threads - first;
  return lanes == 32 ? 0xffffffffu : (1u << lanes) - 1u;
}
