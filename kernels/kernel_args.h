#pragma once
/// \file
/// \brief Host-side argument checks shared by the kernel launchers: a bad size, head count or
/// version number is a `std::invalid_argument` naming the launcher, the argument and its value,
/// thrown before anything is launched (DESIGN.md, "Bad input"). Kernels stay a leaf of the
/// project, so these use the standard exception rather than common/error.h.

#include <cstdint>
#include <stdexcept>
#include <string>

namespace nanoserve::kargs {

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
