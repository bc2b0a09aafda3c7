#pragma once
/// \file
/// \brief Philox4x32-10, the project's one counter-based random generator (Salmon et al.,
/// "Parallel random numbers: as easy as 1, 2, 3", SC 2011; the generator behind cuRAND's
/// Philox), as one `__host__ __device__` implementation: the host sampler
/// (common/sampling/sampler.h) and the device sampler (kernels/sampling.h) compute the same bits
/// from the same (seed, position), so they draw the same uniform.
///
/// It lives in kernels/ because that is the lowest layer every other one may include
/// (scripts/check_layering.sh); common/sampling/rng.h re-exports it with the design notes.
/// Header-only: no globals, no state, no standard-library types in device code, 32-bit
/// multiplies in 64-bit products.

#include <cstddef>
#include <cstdint>

/// \brief `__host__ __device__` under nvcc; nothing for the host compiler and the simulator
/// (whose kernels are host code).
#if defined(__CUDACC__)
#define NANOSERVE_HOST_DEVICE __host__ __device__
#else
#define NANOSERVE_HOST_DEVICE
#endif

namespace nanoserve {

/// \brief Four 32-bit words: a Philox counter block or output block (an aggregate, so
/// `Philox4x32{a, b, c, d}` works; indexable like the `std::array` it replaces).
struct Philox4x32 {
  uint32_t word[4];  ///< the four words, word[0] first

  /// \brief Word `i` (0..3).
  NANOSERVE_HOST_DEVICE uint32_t& operator[](std::size_t i) { return word[i]; }
  /// \brief Word `i` (0..3).
  NANOSERVE_HOST_DEVICE const uint32_t& operator[](std::size_t i) const { return word[i]; }
  /// \brief All four words equal.
  NANOSERVE_HOST_DEVICE friend bool operator==(const Philox4x32& a, const Philox4x32& b) {
    return a.word[0] == b.word[0] && a.word[1] == b.word[1] && a.word[2] == b.word[2] &&
           a.word[3] == b.word[3];
  }
  /// \brief Some word differs.
  NANOSERVE_HOST_DEVICE friend bool operator!=(const Philox4x32& a, const Philox4x32& b) {
    return !(a == b);
  }
};

/// \brief The two 32-bit words of a Philox key.
struct PhiloxKey {
  uint32_t word[2];  ///< word[0] = low half of the seed, word[1] = high half
};

/// \brief Philox4x32 with 10 rounds: bijectively scrambles `counter` under `key`.
NANOSERVE_HOST_DEVICE inline Philox4x32 philox4x32_10(Philox4x32 counter, PhiloxKey key) {
  constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;   // round multipliers
  constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;  // key schedule increments
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t(kMul0) * counter.word[0];
    const uint64_t p1 = uint64_t(kMul1) * counter.word[2];
    counter = Philox4x32{{uint32_t(p1 >> 32) ^ counter.word[1] ^ key.word[0], uint32_t(p1),
                          uint32_t(p0 >> 32) ^ counter.word[3] ^ key.word[1], uint32_t(p0)}};
    key.word[0] += kWeyl0;
    key.word[1] += kWeyl1;
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
NANOSERVE_HOST_DEVICE inline Philox4x32 random_bits(uint64_t seed, uint64_t position,
                                                    RngStream stream, uint32_t index = 0) {
  return philox4x32_10(Philox4x32{{uint32_t(position), uint32_t(position >> 32),
                                   static_cast<uint32_t>(stream), index}},
                       PhiloxKey{{uint32_t(seed), uint32_t(seed >> 32)}});
}

/// \brief A float uniform in [0, 1) with 24 random bits (every value exactly representable).
NANOSERVE_HOST_DEVICE inline float uniform_float(uint32_t bits) {
  return float(bits >> 8) * (1.0f / 16777216.0f);
}

/// \brief A double uniform in [0, 1) with 53 random bits from two words (exact: integer
/// arithmetic, then one multiplication by a power of two, so host and device agree bit for bit).
NANOSERVE_HOST_DEVICE inline double uniform_double(uint32_t hi, uint32_t lo) {
  const uint64_t x = (uint64_t(hi) << 21) ^ (uint64_t(lo) >> 11);
  return double(x & ((uint64_t(1) << 53) - 1)) * (1.0 / 9007199254740992.0);
}

/// \brief The uniform [0, 1) draw of the sampler for one request at one token position.
NANOSERVE_HOST_DEVICE inline double uniform01(uint64_t seed, uint64_t position, RngStream stream,
                                              uint32_t index = 0) {
  const Philox4x32 r = random_bits(seed, position, stream, index);
  return uniform_double(r.word[0], r.word[1]);
}

}  // namespace nanoserve
