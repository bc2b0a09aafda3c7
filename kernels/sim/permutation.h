#pragma once
/// \file
/// \brief Internal to the simulator: the order in which blocks (and threads) are started.
///
/// The shuffled order must work for grids of up to 2^31·2^16·2^16 blocks without storing a
/// permutation, so it is a seeded bijection computed on the fly: a 4-round Feistel network on
/// the smallest even number of bits covering n, with cycle-walking to stay below n (fewer than
/// 4 steps on average).

#include <cstdint>

#include "kernels/sim/launch.h"

namespace nanoserve::sim {

/// \brief splitmix64 finalizer: a fast, well-mixing 64-bit hash.
inline std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// \brief A bijection of [0, n) chosen by an Order (and a seed for Order::kShuffle).
class Permutation {
 public:
  /// \brief The permutation of [0, n) for `order`.
  Permutation(Order order, std::uint64_t seed, std::uint64_t n) : order_(order), n_(n) {
    half_bits_ = 1;
    while (half_bits_ < 32 && (std::uint64_t{1} << (2 * half_bits_)) < n) ++half_bits_;
    for (int r = 0; r < kRounds; ++r) keys_[r] = mix64(seed * kRounds + r);
  }

  /// \brief The element started `i`-th.
  std::uint64_t operator()(std::uint64_t i) const {
    switch (order_) {
      case Order::kForward: return i;
      case Order::kReverse: return n_ - 1 - i;
      case Order::kShuffle: break;
    }
    std::uint64_t x = encrypt(i);
    while (x >= n_) x = encrypt(x);  // cycle-walking: terminates because encrypt is a bijection
    return x;
  }

 private:
  static constexpr int kRounds = 4;

  std::uint64_t encrypt(std::uint64_t x) const {
    const std::uint64_t mask = (std::uint64_t{1} << half_bits_) - 1;
    std::uint64_t left = x >> half_bits_;
    std::uint64_t right = x & mask;
    for (int r = 0; r < kRounds; ++r) {
      const std::uint64_t next = left ^ (mix64(right ^ keys_[r]) & mask);
      left = right;
      right = next;
    }
    return (left << half_bits_) | right;
  }

  Order order_;
  std::uint64_t n_;
  int half_bits_ = 1;
  std::uint64_t keys_[kRounds] = {};
};

}  // namespace nanoserve::sim
