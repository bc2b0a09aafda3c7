#pragma once
/// \file
/// \brief Helpers for checking kernels against the oracle: seeded inputs, storage-type
/// rounding (the oracle sees exactly the values the kernel read, converted back to fp32, so only
/// the arithmetic differs), the storage types as a gtest type list, and a comparison that prints
/// the first mismatch.

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/allclose.h"
#include "common/sampling/rng.h"
#include "kernels/dtype.cuh"

namespace nanoserve::testing {

/// \brief `n` values uniform in [offset - scale, offset + scale), input number `id` of test
/// seed `seed` (the project's Philox RNG: the same values on every machine).
inline std::vector<float> random_values(std::uint64_t seed, std::uint64_t id, std::size_t n,
                                        float scale, float offset = 0.0f) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double u = uniform01(seed, id, RngStream::kWeights, static_cast<std::uint32_t>(i));
    v[i] = offset + scale * static_cast<float>(2.0 * u - 1.0);
  }
  return v;
}

/// \brief Rounds every value to the storage type T (nearest even).
template <typename T>
std::vector<T> to_storage(const std::vector<float>& values) {
  std::vector<T> out(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) out[i] = from_float<T>(values[i]);
  return out;
}

/// \brief Widens storage values back to fp32 (exact).
template <typename T>
std::vector<float> to_floats(const std::vector<T>& values) {
  std::vector<float> out(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) out[i] = to_float(values[i]);
  return out;
}

/// \brief The storage types every kernel with a storage parameter is tested in.
using StorageTypes = ::testing::Types<float, __half, __nv_bfloat16>;

/// \brief Names typed tests `fp32` / `fp16` / `bf16` instead of 0 / 1 / 2.
struct StorageTypeNames {
  /// \brief The dtype name of T.
  template <typename T>
  static std::string GetName(int) {
    return dtype_name(dtype_of<T>());
  }
};

/// \brief Expects `got` within `tol` of `want`; on failure prints `context` and the worst and
/// first-bad elements.
inline void expect_close(const std::vector<float>& got, const std::vector<float>& want,
                         Tolerance tol, const std::string& context) {
  const CloseResult r = allclose(got, want, tol);
  EXPECT_TRUE(r.ok) << context << ": " << r.summary();
}

}  // namespace nanoserve::testing
