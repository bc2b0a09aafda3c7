#pragma once
/// \file
/// \brief The project's one source of randomness: Philox4x32-10, a counter-based generator
/// (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011; the generator behind
/// cuRAND's Philox). A draw is a pure function of (key, counter), so the token sampled at
/// position p of a request with seed s is the same whether the request runs alone, batched,
/// preempted or speculatively — there is no generator state to advance (docs/design.md,
/// "Determinism").
///
/// The implementation is kernels/philox.h — one `__host__ __device__` copy, so that the device
/// sampler (kernels/sampling.h) draws the very bits the host sampler draws. This header is the
/// name host code includes: `Philox4x32`, `philox4x32_10`, `RngStream`, `random_bits`,
/// `uniform_float`, `uniform_double`, `uniform01`.

#include "kernels/philox.h"
