#pragma once
/// \file
/// \brief Test fixtures of the quantized linear kernels (qgemv, qgemm, launch_quant_linear): a
/// chapter 5 `QuantizedLinear` uploaded to the device and viewed as a `QuantizedWeightView`
/// (what the engine does for a quantized model), and a seeded random problem `Y = X Wᵀ` whose
/// reference is the oracle run on `QuantizedLinear::dequantize()`.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "common/oracle/ops.h"
#include "common/quant/quantized_linear.h"
#include "common/sampling/rng.h"
#include "kernels/device_buffer.h"
#include "kernels/linear_common.cuh"
#include "kernels/qlinear_common.cuh"
#include "tests/kernels/linear_test_support.h"

namespace nanoserve::testing {

/// \brief Device copies of a quantized weight's arrays, and the view the kernels take.
struct DeviceQuantWeight {
  ::nanoserve::DeviceBuffer<std::uint8_t> qweight;  ///< (rows, row_bytes) packed codes
  ::nanoserve::DeviceBuffer<std::uint16_t> scales;  ///< (rows, groups) fp16 bits
  ::nanoserve::DeviceBuffer<std::uint16_t> zeros;   ///< (rows, groups) fp16 bits, or empty
  ::nanoserve::DeviceBuffer<std::int32_t> g_idx;    ///< (cols), or empty
  int rows = 0;                                     ///< output features
  int cols = 0;                                     ///< input features
  int bits = 4;                                     ///< 4 or 8
  int group_size = 1;                               ///< the view's group width (>= 1)

  /// \brief The kernels' view of these buffers (null for empty zeros / g_idx).
  QuantizedWeightView view() const {
    QuantizedWeightView v;
    v.qweight = qweight.get();
    v.scales = reinterpret_cast<const __half*>(scales.get());
    v.zeros = reinterpret_cast<const __half*>(zeros.get());
    v.g_idx = g_idx.get();
    v.rows = rows;
    v.cols = cols;
    v.bits = bits;
    v.group_size = group_size;
    return v;
  }
};

/// \brief Uploads `q` the way the engine does: the arrays as stored, per-channel groups as a
/// group width of `cols`.
inline DeviceQuantWeight upload(const quant::QuantizedLinear& q) {
  DeviceQuantWeight d;
  d.qweight = ::nanoserve::DeviceBuffer<std::uint8_t>(q.qweight);
  d.scales = ::nanoserve::DeviceBuffer<std::uint16_t>(q.scales);
  d.zeros = ::nanoserve::DeviceBuffer<std::uint16_t>(q.zeros);
  d.g_idx = ::nanoserve::DeviceBuffer<std::int32_t>(q.g_idx);
  d.rows = q.rows;
  d.cols = q.cols;
  d.bits = q.scheme.bits;
  d.group_size = q.scheme.group_width(q.cols);
  return d;
}

/// \brief What a random quantized problem is made of.
struct QuantCase {
  int batch = 1;                         ///< rows of X and Y (tokens)
  int rows = 1;                          ///< output features (rows of W)
  int cols = 1;                          ///< input features
  quant::QuantScheme scheme;             ///< bits, group size (0 = per channel), symmetric
  bool act_order = false;                ///< a random column permutation stored as g_idx
  Epilogue epilogue = Epilogue::kStore;  ///< store or accumulate

  /// \brief E.g. "int4-g128-asym act-order 17x1000 batch 3 accumulate".
  std::string label() const {
    return scheme.label() + (act_order ? " act-order " : " ") + std::to_string(rows) + "x" +
           std::to_string(cols) + " batch " + std::to_string(batch) +
           (epilogue == Epilogue::kAccumulate ? " accumulate" : "");
  }
};

/// \brief A random weight-only quantized problem on the device.
///
/// Codes are uniform over the whole code range (every nibble and byte value occurs), zero
/// points uniform over it too (asymmetric), scales ~ U(0.5, 1.5) / (sqrt(cols) · (2^bits − 1))
/// so that |W| <= 1.5 / sqrt(cols) (|q − z| <= 2^bits − 1) like a layer's weights and every
/// output is O(1) — the regime tol::kFp32DotReorder is sized for. With act-order, columns are
/// grouped in a random order, as GPTQ stores them (group of column perm[i] = i / group width).
struct QuantLinearProblem {
  /// \brief Draws the problem for `c` from `seed`.
  QuantLinearProblem(const QuantCase& c, std::uint64_t seed) : spec(c) {
    const quant::QuantScheme& s = c.scheme;
    const int groups = s.groups(c.cols);
    std::vector<std::uint8_t> codes(static_cast<std::size_t>(c.rows) * c.cols);  // (rows, cols)
    for (std::size_t i = 0; i < codes.size(); ++i) {
      codes[i] = static_cast<std::uint8_t>(draw(seed, 0, i) % (s.max_code() + 1));
    }
    std::vector<quant::GroupParams> params(static_cast<std::size_t>(c.rows) * groups);
    const float base = 1.0f / (std::sqrt(static_cast<float>(c.cols)) * s.max_code());
    for (std::size_t i = 0; i < params.size(); ++i) {
      params[i].scale = base * (0.5f + uniform_float(draw(seed, 1, i)));
      params[i].zero = s.symmetric ? static_cast<float>(s.symmetric_zero())
                                   : static_cast<float>(draw(seed, 2, i) % (s.max_code() + 1));
    }
    std::vector<std::int32_t> g_idx;
    if (c.act_order) {
      std::vector<int> perm(static_cast<std::size_t>(c.cols));
      for (int i = 0; i < c.cols; ++i) perm[static_cast<std::size_t>(i)] = i;
      for (int i = c.cols - 1; i > 0; --i) {  // Fisher–Yates
        std::swap(perm[static_cast<std::size_t>(i)],
                  perm[draw(seed, 3, static_cast<std::size_t>(i)) % static_cast<unsigned>(i + 1)]);
      }
      g_idx.resize(static_cast<std::size_t>(c.cols));
      const int width = s.group_width(c.cols);
      for (int i = 0; i < c.cols; ++i) g_idx[static_cast<std::size_t>(perm[i])] = i / width;
    }
    q = quant::make_quantized_linear(c.rows, c.cols, s, codes, params, std::move(g_idx));
    w_dequantized = q.dequantize();
    x = random_uniform(static_cast<std::size_t>(c.batch) * c.cols, seed + 7, 1.0f);
    const std::size_t y_size = static_cast<std::size_t>(c.batch) * c.rows;
    y_initial = c.epilogue == Epilogue::kAccumulate
                    ? random_uniform(y_size, seed + 8, 1.0f)
                    : std::vector<float>(y_size, std::numeric_limits<float>::quiet_NaN());
    std::vector<float> y_with_guard = y_initial;
    y_with_guard.resize(y_size + kGuard, kGuardValue);
    device = upload(q);
    dx = ::nanoserve::DeviceBuffer<float>(x);
    dy = ::nanoserve::DeviceBuffer<float>(y_with_guard);
  }

  /// \brief The kernels' view of W.
  QuantizedWeightView view() const { return device.view(); }

  /// \brief oracle::matmul of X with the dequantized W, plus the initial Y when accumulating.
  std::vector<float> reference() const {
    std::vector<float> y(static_cast<std::size_t>(spec.batch) * spec.rows);
    oracle::matmul(x.data(), w_dequantized.data(), spec.batch, spec.cols, spec.rows, y.data());
    if (spec.epilogue == Epilogue::kAccumulate) {
      for (std::size_t i = 0; i < y.size(); ++i) y[i] += y_initial[i];
    }
    return y;
  }

  /// \brief Y from the device; adds a failure if anything past its end was written.
  std::vector<float> result() const {
    std::vector<float> y = dy.to_host();
    const std::size_t y_size = static_cast<std::size_t>(spec.batch) * spec.rows;
    for (std::size_t i = y_size; i < y.size(); ++i) {
      if (y[i] != kGuardValue) {
        ADD_FAILURE() << spec.label() << ": wrote past the end of Y at guard element "
                      << i - y_size;
        break;
      }
    }
    y.resize(y_size);
    return y;
  }

  static constexpr std::size_t kGuard = 67;       ///< floats after Y that must stay untouched
  static constexpr float kGuardValue = 12345.0f;  ///< their value

  QuantCase spec;                       ///< what was drawn
  quant::QuantizedLinear q;             ///< the host weight (codes, scales, zeros, g_idx)
  std::vector<float> w_dequantized;     ///< (rows, cols) q.dequantize()
  std::vector<float> x;                 ///< (batch, cols) inputs
  std::vector<float> y_initial;         ///< (batch, rows) Y before the launch
  DeviceQuantWeight device;             ///< device copy of q
  ::nanoserve::DeviceBuffer<float> dx;  ///< device copy of x
  ::nanoserve::DeviceBuffer<float> dy;  ///< (batch * rows + kGuard) device Y and its guard zone

 private:
  // 32 random bits number `i` of stream `what` of this seed.
  static std::uint32_t draw(std::uint64_t seed, std::uint64_t what, std::size_t i) {
    return random_bits(seed * 8 + what, i / 4, RngStream::kWeights)[i % 4];
  }
};

}  // namespace nanoserve::testing
