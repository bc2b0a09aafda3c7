#pragma once
/// \file
/// \brief Host-side argument checks shared by the kernel launchers: a bad size, head count or
/// version number is a `std::invalid_argument` naming the launcher, the argument and its value,
/// thrown before anything is launched (docs/design.md, "Bad input"). Kernels stay a leaf of the
/// project, so these use the standard exception rather than common/error.h.

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

namespace nanoserve::kargs {

/// \brief Largest gridDim.y and gridDim.z of a launch (gridDim.x reaches 2^31 - 1).
inline constexpr int kMaxGridYZ = 65535;

/// \brief Throws `std::invalid_argument("<op>: <name> = <value> must be >= <min>")` unless
/// `value >= min`.
inline void require_at_least(const char* op, const char* name, std::int64_t value,
                             std::int64_t min) {
  if (value < min) {
    throw std::invalid_argument(std::string(op) + ": " + name + " = " + std::to_string(value) +
                                " must be >= " + std::to_string(min));
  }
}

/// \brief Throws `std::invalid_argument` unless `condition`; the message is
/// `"<op>: <what>"`.
inline void require(bool condition, const char* op, const std::string& what) {
  if (!condition) throw std::invalid_argument(std::string(op) + ": " + what);
}

/// \brief Checks a kernel version argument: 0 (let the launcher choose) or 1..`count`.
inline void require_version(const char* op, int version, int count) {
  if (version < 0 || version > count) {
    throw std::invalid_argument(std::string(op) + ": version = " + std::to_string(version) +
                                " must be 0 (auto) or in [1, " + std::to_string(count) + "]");
  }
}

/// \brief Calls `f(std::integral_constant<int, kIndex + 1>{})` for the index with
/// `kIndex + 1 == version` (run_version's fold).
template <typename F, int... kIndex>
void call_version(int version, F& f, std::integer_sequence<int, kIndex...>) {
  (void)((version == kIndex + 1 && (f(std::integral_constant<int, kIndex + 1>{}), true)) || ...);
}

/// \brief Calls `f(std::integral_constant<int, version>{})` for `version` in 1..kCount: how a
/// launcher turns a run-time version number into the compile-time one its kernels take.
/// Throws `std::invalid_argument("<op>: version V does not exist (1..kCount)")` otherwise.
template <int kCount, typename F>
void run_version(const char* op, int version, F&& f) {
  if (version < 1 || version > kCount) {
    throw std::invalid_argument(std::string(op) + ": version " + std::to_string(version) +
                                " does not exist (1.." + std::to_string(kCount) + ")");
  }
  call_version(version, f, std::make_integer_sequence<int, kCount>{});
}

/// \brief Throws unless `n_heads` is a positive multiple of a positive `n_kv_heads` (GQA).
inline void require_gqa_heads(const char* op, int n_heads, int n_kv_heads) {
  require_at_least(op, "n_heads", n_heads, 1);
  require_at_least(op, "n_kv_heads", n_kv_heads, 1);
  if (n_heads % n_kv_heads != 0) {
    throw std::invalid_argument(std::string(op) + ": n_heads = " + std::to_string(n_heads) +
                                " is not a multiple of n_kv_heads = " +
                                std::to_string(n_kv_heads));
  }
}

/// \brief Grid size for `n` items of `per_block` each (n >= 0, per_block > 0).
inline unsigned blocks_for(std::int64_t n, std::int64_t per_block) {
  return static_cast<unsigned>((n + per_block - 1) / per_block);
}

}  // namespace nanoserve::kargs
