#include "common/quant/rtn.h"

#include <algorithm>
#include <string>

#include "common/error.h"

namespace nanoserve::quant {

namespace {

void check_shape(int rows, int cols, const QuantScheme& scheme) {
  scheme.validate();
  if (rows <= 0 || cols <= 0) {
    throw InvalidArgument("quantize: shape (" + std::to_string(rows) + ", " +
                          std::to_string(cols) + ") is empty");
  }
}

/// Calls `emit(row, col, code, params)` for every element, group by group.
template <typename Emit>
void rtn_rows(const float* w, int rows, int cols, const QuantScheme& scheme, Emit&& emit) {
  const int width = scheme.group_width(cols);
  for (int r = 0; r < rows; ++r) {
    const float* row = w + int64_t(r) * cols;  // (cols)
    for (int g0 = 0; g0 < cols; g0 += width) {
      const int n = std::min(width, cols - g0);
      const GroupParams p = choose_group_params(row + g0, n, scheme);
      for (int c = g0; c < g0 + n; ++c) emit(r, c, quantize_code(row[c], p, scheme.max_code()), p);
    }
  }
}

}  // namespace

QuantizedLinear quantize_rtn(const float* w, int rows, int cols, const QuantScheme& scheme) {
  check_shape(rows, cols, scheme);
  // BEGIN EXERCISE ch05.1 "Round-to-nearest, group by group" points=10 minutes=20
  // HINT: rtn_rows() calls emit(row, col, code, params) for every weight. Store each code at
  // HINT: (row, col) of a (rows, cols) array and each group's params at (row, col / width) of
  // HINT: a (rows, groups) array, then make_quantized_linear(rows, cols, scheme, codes, params).
  // STUB: (void)w;
  // STUB: throw Error("exercise ch05.1 not done: quantize_rtn");
  const int groups = scheme.groups(cols), width = scheme.group_width(cols);
  std::vector<uint8_t> codes(size_t(int64_t(rows) * cols));       // (rows, cols)
  std::vector<GroupParams> params(size_t(int64_t(rows) * groups));  // (rows, groups)
  rtn_rows(w, rows, cols, scheme, [&](int r, int c, int q, const GroupParams& p) {
    codes[size_t(int64_t(r) * cols + c)] = uint8_t(q);
    params[size_t(int64_t(r) * groups + c / width)] = p;
  });
  return make_quantized_linear(rows, cols, scheme, codes, params);
  // END EXERCISE
}

std::vector<float> fake_quantize_rtn(const float* w, int rows, int cols,
                                     const QuantScheme& scheme) {
  check_shape(rows, cols, scheme);
  std::vector<float> out(size_t(int64_t(rows) * cols));  // (rows, cols)
  rtn_rows(w, rows, cols, scheme, [&](int r, int c, int q, const GroupParams& p) {
    out[size_t(int64_t(r) * cols + c)] = dequantize_code(q, p);
  });
  return out;
}

}  // namespace nanoserve::quant
