#pragma once
/// \file
/// \brief The project's one source of randomness: Philox4x32-10, a counter-based generator
/// (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011; the generator behind
/// cuRAND's Philox). A draw is a pure function of (key, counter), so the token sampled at
/// position p of a request with seed s is the same whether the request runs alone, batched,
/// preempted or speculatively — there is no generator state to advance (docs/design.md,
/// "Determinism").
///
/// Header-only and `__host__ __device__`-friendly: no globals, no state, 32-bit multiplies.

#include <array>
#include <cstdint>

namespace nanoserve {

/// \brief Four 32-bit words: a Philox counter block or output block.
using Philox4x32 = std::array<uint32_t, 4>;

/// \brief Philox4x32 with 10 rounds: bijectively scrambles `counter` under `key`.
inline Philox4x32 philox4x32_10(Philox4x32 counter, std::array<uint32_t, 2> key) {
  constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;   // round multipliers
  constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;  // key schedule increments
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t(kMul0) * counter[0];
    const uint64_t p1 = uint64_t(kMul1) * counter[2];
    counter = {uint32_t(p1 >> 32) ^ counter[1] ^ key[0], uint32_t(p1),
               uint32_t(p0 >> 32) ^ counter[3] ^ key[1], uint32_t(p0)};
    key[0] += kWeyl0;
    key[1] += kWeyl1;
  }
  return counter;
}

/// \brief What a random draw is for; keeps independent uses of one (seed, position) apart.
enum class RngStream : uint32_t {
  kSample = 0,          ///< the sampler's draw for the token at a position
  kSpecAccept = 1,      ///< speculative decoding: accept/reject a draft token
  kSpecResidual = 2,    ///< speculative decoding: resample from the residual distribution
  kDraftSample = 3,     ///< speculative decoding: the draft model's own sample
  kWorkload = 4,        ///< workload generators (arrivals, lengths)
  kWeights = 5,         ///< synthetic model weights
};

/// \brief Four independent 32-bit random words for (seed, position, stream, index).
inline Philox4x32 random_bits(uint64_t seed, uint64_t position, RngStream stream,
                              uint32_t index = 0) {
  return philox4x32_10({uint32_t(position), uint32_t(position >> 32),
                        static_cast<uint32_t>(stream), index},
                       {uint32_t(seed), uint32_t(seed >> 32)});
}

/// \brief A float uniform in [0, 1) with 24 random bits (every value exactly representable).
inline float uniform_float(uint32_t bits) { return float(bits >> 8) * (1.0f / 16777216.0f); }

/// \brief A double uniform in [0, 1) with 53 random bits from two words.
inline double uniform_double(uint32_t hi, uint32_t lo) {
  const uint64_t x = (uint64_t(hi) << 21) ^ (uint64_t(lo) >> 11);
  return double(x & ((uint64_t(1) << 53) - 1)) * (1.0 / 9007199254740992.0);
}

/// \brief The uniform [0, 1) draw of the sampler for one request at one token position.
inline double uniform01(uint64_t seed, uint64_t position, RngStream stream,
                        uint32_t index = 0) {
  const Philox4x32 r = random_bits(seed, position, stream, index);
  return uniform_double(r[0], r[1]);
}

}  // namespace nanoserve
