#pragma once
/// \file
/// \brief Test fixtures shared by the GEMV, GEMM and launch_linear tests: a seeded random
/// problem `Y = X Wᵀ` on the device, with the dequantized weights the oracle is run on, and an
/// output buffer with a guard zone that catches writes past the end of Y.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "common/sampling/rng.h"
#include "kernels/device_buffer.h"
#include "kernels/dtype.cuh"
#include "kernels/linear_common.cuh"

namespace nanoserve::testing {

/// \brief Storage types every linear kernel is tested in.
using StorageTypes = ::testing::Types<float, __half, __nv_bfloat16>;

/// \brief Names typed tests by storage type ("fp32", "fp16", "bf16") instead of 0, 1, 2.
struct StorageTypeNames {
  /// \brief The dtype name of T.
  template <typename T>
  static std::string GetName(int) {
    return dtype_name(dtype_of<T>());
  }
};

/// \brief `n` values uniform in [-scale, scale), a pure function of (seed, index).
inline std::vector<float> random_uniform(std::size_t n, std::uint64_t seed, float scale) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    const Philox4x32 bits = random_bits(seed, i / 4, RngStream::kWeights);
    v[i] = (2.0f * uniform_float(bits[i % 4]) - 1.0f) * scale;
  }
  return v;
}

/// \brief A random linear problem on the device: W (n, k) in storage type T, X (rows, k), and Y
/// (rows, n) followed by a guard zone.
///
/// W is drawn at scale 1/sqrt(k) (like a layer's initialisation) so that every output is O(1)
/// whatever k is; the oracle runs on `w_dequantized`, the rounded T values converted back to
/// fp32, so kernel and oracle multiply exactly the same numbers and only the order of the fp32
/// additions differs.
template <typename T>
struct LinearProblem {
  /// \brief Fills W, X and the initial Y for `epilogue` (NaN for kStore — any output the kernel
  /// fails to write stays NaN — and random values for kAccumulate).
  LinearProblem(int rows_, int n_, int k_, Epilogue epilogue_, std::uint64_t seed)
      : rows(rows_), n(n_), k(k_), epilogue(epilogue_) {
    const std::size_t w_size = static_cast<std::size_t>(n) * k;
    const std::vector<float> w_values =
        random_uniform(w_size, seed, 1.0f / std::sqrt(static_cast<float>(k > 0 ? k : 1)));
    w.resize(w_size);
    w_dequantized.resize(w_size);
    for (std::size_t i = 0; i < w_size; ++i) {
      w[i] = from_float<T>(w_values[i]);
      w_dequantized[i] = to_float(w[i]);
    }
    x = random_uniform(static_cast<std::size_t>(rows) * k, seed + 1, 1.0f);
    const std::size_t y_size = static_cast<std::size_t>(rows) * n;
    y_initial = epilogue == Epilogue::kAccumulate
                    ? random_uniform(y_size, seed + 2, 1.0f)
                    : std::vector<float>(y_size, std::numeric_limits<float>::quiet_NaN());
    std::vector<float> y_with_guard = y_initial;
    y_with_guard.resize(y_size + kGuard, kGuardValue);
    dw = ::nanoserve::DeviceBuffer<T>(w);
    dx = ::nanoserve::DeviceBuffer<float>(x);
    dy = ::nanoserve::DeviceBuffer<float>(y_with_guard);
  }

  /// \brief Y from the device; adds a failure if anything past its end was written.
  std::vector<float> result() const {
    std::vector<float> y = dy.to_host();
    const std::size_t y_size = static_cast<std::size_t>(rows) * n;
    for (std::size_t i = y_size; i < y.size(); ++i) {
      if (y[i] != kGuardValue) {
        ADD_FAILURE() << "wrote past the end of Y (" << rows << "x" << n << ") at guard element "
                      << i - y_size;
        break;
      }
    }
    y.resize(y_size);
    return y;
  }

  /// \brief Adds the initial Y to `product` when the problem accumulates.
  std::vector<float> apply_epilogue_on_host(std::vector<float> product) const {
    if (epilogue == Epilogue::kAccumulate) {
      for (std::size_t i = 0; i < product.size(); ++i) product[i] += y_initial[i];
    }
    return product;
  }

  static constexpr std::size_t kGuard = 67;       ///< floats after Y that must stay untouched
  static constexpr float kGuardValue = 12345.0f;  ///< their value

  int rows;                          ///< rows of X and Y
  int n;                             ///< rows of W, columns of Y
  int k;                             ///< columns of W and X
  Epilogue epilogue;                 ///< store or accumulate
  std::vector<T> w;                  ///< (n, k) weights in storage type T
  std::vector<float> w_dequantized;  ///< (n, k) the same weights as fp32 (exact)
  std::vector<float> x;              ///< (rows, k) inputs
  std::vector<float> y_initial;      ///< (rows, n) Y before the launch
  // nanoserve::DeviceBuffer (kernels/device_buffer.h), not testing::DeviceBuffer.
  ::nanoserve::DeviceBuffer<T> dw;      ///< device copy of w
  ::nanoserve::DeviceBuffer<float> dx;  ///< device copy of x
  ::nanoserve::DeviceBuffer<float> dy;  ///< (rows * n + kGuard) device Y and its guard zone
};

}  // namespace nanoserve::testing
