#include "common/quant/quantized_linear.h"

#include <cmath>

#include "common/error.h"
#include "common/loaders/half_float.h"
#include "common/quant/packing.h"

namespace nanoserve::quant {

int64_t QuantizedLinear::row_bytes() const { return packed_row_bytes(cols, scheme.bits); }

int QuantizedLinear::code(int row, int col) const {
  return unpack_code(qweight.data(), row_bytes(), scheme.bits, row, col);
}

GroupParams QuantizedLinear::params(int row, int group) const {
  const size_t i = size_t(int64_t(row) * groups() + group);
  GroupParams p;
  p.scale = fp16_to_fp32(scales[i]);
  p.zero = scheme.symmetric ? float(scheme.symmetric_zero()) : fp16_to_fp32(zeros[i]);
  return p;
}

std::vector<float> QuantizedLinear::dequantize() const {
  std::vector<float> w(size_t(int64_t(rows) * cols));  // (rows, cols)
  const int64_t stride = row_bytes();
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      const int q = unpack_code(qweight.data(), stride, scheme.bits, r, c);
      w[size_t(int64_t(r) * cols + c)] = dequantize_code(q, params(r, group_of(c)));
    }
  }
  return w;
}

int64_t QuantizedLinear::bytes() const {
  return int64_t(qweight.size()) + 2 * int64_t(scales.size() + zeros.size()) +
         4 * int64_t(g_idx.size());
}

void QuantizedLinear::validate(const std::string& file, const std::string& name) const {
  auto fail = [&](const std::string& part, const std::string& detail) {
    throw LoadError(file, name + "." + part, detail);
  };
  if (scheme.bits != 4 && scheme.bits != 8) fail("bits", std::to_string(scheme.bits) + " is not 4 or 8");
  if (rows <= 0 || cols <= 0) {
    fail("shape", "(" + std::to_string(rows) + ", " + std::to_string(cols) + ") is empty");
  }
  auto check_size = [&](const std::string& part, size_t got, int64_t want) {
    if (int64_t(got) != want) {
      fail(part, "has " + std::to_string(got) + " entries, expected " + std::to_string(want));
    }
  };
  const int64_t n_params = int64_t(rows) * groups();
  check_size("qweight", qweight.size(), int64_t(rows) * row_bytes());
  check_size("scales", scales.size(), n_params);
  check_size("zeros", zeros.size(), scheme.symmetric ? 0 : n_params);
  if (!g_idx.empty()) check_size("g_idx", g_idx.size(), cols);
  for (size_t i = 0; i < scales.size(); ++i) {
    const float s = fp16_to_fp32(scales[i]);
    if (!(std::isfinite(s) && s > 0.0f)) {
      fail("scales", "entry " + std::to_string(i) + " is " + std::to_string(s) +
                         ", not a finite positive scale");
    }
  }
  for (size_t i = 0; i < zeros.size(); ++i) {
    const float z = fp16_to_fp32(zeros[i]);
    if (!(z >= 0.0f && z <= float(scheme.max_code()) && z == std::floor(z))) {
      fail("zeros", "entry " + std::to_string(i) + " is " + std::to_string(z) +
                        ", not an integer in [0, " + std::to_string(scheme.max_code()) + "]");
    }
  }
  for (size_t i = 0; i < g_idx.size(); ++i) {
    if (g_idx[i] < 0 || g_idx[i] >= groups()) {
      fail("g_idx", "column " + std::to_string(i) + " has group " + std::to_string(g_idx[i]) +
                        ", outside [0, " + std::to_string(groups()) + ")");
    }
  }
}

QuantizedLinear make_quantized_linear(int rows, int cols, const QuantScheme& scheme,
                                      const std::vector<uint8_t>& codes,
                                      const std::vector<GroupParams>& params,
                                      std::vector<int32_t> g_idx) {
  scheme.validate();
  QuantizedLinear q;
  q.rows = rows;
  q.cols = cols;
  q.scheme = scheme;
  q.qweight = pack_codes(codes, rows, cols, scheme.bits);
  const int64_t n_params = int64_t(rows) * q.groups();
  if (int64_t(params.size()) != n_params) {
    throw InvalidArgument("make_quantized_linear: " + std::to_string(params.size()) +
                          " group parameters, expected " + std::to_string(n_params));
  }
  q.scales.resize(size_t(n_params));
  if (!scheme.symmetric) q.zeros.resize(size_t(n_params));
  for (size_t i = 0; i < params.size(); ++i) {
    q.scales[i] = fp16_from_float(params[i].scale);
    if (!scheme.symmetric) q.zeros[i] = fp16_from_float(params[i].zero);
  }
  q.g_idx = std::move(g_idx);
  q.validate("make_quantized_linear", "weight");
  return q;
}

}  // namespace nanoserve::quant
