#pragma once
/// \file
/// \brief Warp-level intrinsics for the simulator: `__syncwarp`, the four `__shfl*_sync`, and
/// `__ballot_sync` / `__any_sync` / `__all_sync`.
///
/// Each lane deposits its value and blocks; the last participating lane to arrive computes every
/// lane's result, so the operation is a true rendezvous (a shuffle inside a branch works, unlike
/// emulators that implement it with a block-wide barrier). The rules checked, each a launch error
/// when broken:
/// - the participants are the lanes of `mask` that exist and have not exited (a partial warp, e.g.
///   the last 16 lanes of a 48-thread block, or lanes that returned early, are simply absent);
/// - the calling lane must be in `mask`, and all participants must pass the same `mask` and reach
///   the same intrinsic at the same call site;
/// - `width` must be a power of two in [1, 32].
///
/// A mask mismatch is seen when a lane arrives while lanes with an overlapping mask wait. If the
/// schedule lets one group complete before the other lane arrives (its lanes then move on or
/// exit, and exited lanes are excluded), the mismatch goes unnoticed — one more reason kernel
/// tests run in both block orders.
///
/// Reading a lane that does not participate gives 0xFF bytes (NaN for floats) — undefined on a
/// GPU. Values of any trivially copyable type up to 8 bytes move as raw bytes, which also covers
/// `__half2` and `__nv_bfloat162` (not trivially copyable in the host headers).

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/sim/builtins.h"

namespace nanoserve::sim {

/// \brief Which warp intrinsic a lane is in.
enum class WarpOp : unsigned char {
  kSync,
  kShflIdx,
  kShflUp,
  kShflDown,
  kShflXor,
  kBallot,
  kAny,
  kAll,
  kWmma  ///< a ballot that the WMMA functions (kernels/sim/wmma.h) use as their rendezvous
};

/// \brief The rendezvous behind every warp intrinsic (implemented by the scheduler).
/// \param op which intrinsic
/// \param mask the lanes taking part, as passed by the caller
/// \param value the lane's payload (raw bytes) or predicate
/// \param lane_arg source lane, delta or lane mask, depending on `op`
/// \param width shuffle segment width
/// \param site the intrinsic's call site
/// \return the lane's result: the shuffled raw bytes, the ballot, or the any/all flag
std::uint64_t warp_op(WarpOp op, unsigned mask, std::uint64_t value, int lane_arg, int width,
                      Site site);

/// \brief Moves a value through a shuffle as raw bytes.
template <typename T>
T shuffle_bytes(WarpOp op, unsigned mask, T var, int lane_arg, int width, Site site) {
  static_assert(sizeof(T) <= 8, "warp shuffles move at most 8 bytes");
  static_assert(std::is_trivially_destructible<T>::value, "shuffled types must be plain data");
  std::uint64_t bits = 0;
  std::memcpy(&bits, static_cast<const void*>(&var), sizeof(T));
  bits = warp_op(op, mask, bits, lane_arg, width, site);
  std::memcpy(static_cast<void*>(&var), &bits, sizeof(T));
  return var;
}

}  // namespace nanoserve::sim

/// \brief Waits until every lane of `mask` reaches this point (and orders their memory).
inline void __syncwarp(unsigned mask = 0xffffffffu, const char* file = __builtin_FILE(),
                       int line = __builtin_LINE()) {
  nanoserve::sim::warp_op(nanoserve::sim::WarpOp::kSync, mask, 0, 0, warpSize, {file, line});
}

/// \brief Reads `var` from lane `src_lane` (modulo `width`) of the caller's width-lane segment.
template <typename T>
T __shfl_sync(unsigned mask, T var, int src_lane, int width = warpSize,
              const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return nanoserve::sim::shuffle_bytes(nanoserve::sim::WarpOp::kShflIdx, mask, var, src_lane, width,
                                       {file, line});
}

/// \brief Reads `var` from lane `lane - delta`; lanes below `delta` in their segment keep theirs.
template <typename T>
T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = warpSize,
                 const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return nanoserve::sim::shuffle_bytes(nanoserve::sim::WarpOp::kShflUp, mask, var,
                                       static_cast<int>(delta), width, {file, line});
}

/// \brief Reads `var` from lane `lane + delta`; lanes whose source leaves the segment keep theirs.
template <typename T>
T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = warpSize,
                   const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return nanoserve::sim::shuffle_bytes(nanoserve::sim::WarpOp::kShflDown, mask, var,
                                       static_cast<int>(delta), width, {file, line});
}

/// \brief Reads `var` from lane `lane ^ lane_mask`; a source in a later segment gives the own
/// value.
template <typename T>
T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = warpSize,
                  const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return nanoserve::sim::shuffle_bytes(nanoserve::sim::WarpOp::kShflXor, mask, var, lane_mask,
                                       width, {file, line});
}

/// \brief Bit `i` of the result is set iff lane `i` participates and passed a non-zero predicate.
inline unsigned __ballot_sync(unsigned mask, int predicate, const char* file = __builtin_FILE(),
                              int line = __builtin_LINE()) {
  return static_cast<unsigned>(nanoserve::sim::warp_op(nanoserve::sim::WarpOp::kBallot, mask,
                                                       predicate != 0, 0, warpSize, {file, line}));
}

/// \brief Non-zero iff any participating lane passed a non-zero predicate.
inline int __any_sync(unsigned mask, int predicate, const char* file = __builtin_FILE(),
                      int line = __builtin_LINE()) {
  return static_cast<int>(nanoserve::sim::warp_op(nanoserve::sim::WarpOp::kAny, mask,
                                                  predicate != 0, 0, warpSize, {file, line}));
}

/// \brief Non-zero iff every participating lane passed a non-zero predicate.
inline int __all_sync(unsigned mask, int predicate, const char* file = __builtin_FILE(),
                      int line = __builtin_LINE()) {
  return static_cast<int>(nanoserve::sim::warp_op(nanoserve::sim::WarpOp::kAll, mask,
                                                  predicate != 0, 0, warpSize, {file, line}));
}
