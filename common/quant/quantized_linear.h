#pragma once
/// \file
/// \brief `QuantizedLinear`: one weight-only quantized linear layer `y = W x`, W (out, in)
/// stored as packed integer codes with per-(row, group) fp16 scales and zero points.
///
///     qweight  (rows, packed_row_bytes(cols, bits))  codes, columns in the ORIGINAL order
///     scales   (rows, groups)                        fp16 bit patterns, s > 0
///     zeros    (rows, groups)                        fp16 integers in [0, 2^bits − 1];
///                                                    empty when symmetric (z = 2^(bits-1))
///     g_idx    (cols)                                group of each column; empty means
///                                                    column c is in group c / group_width
///
///     W[r, c] = scales[r, g] · (code[r, c] − zeros[r, g]),   g = group_of(c)
///
/// `g_idx` is how GPTQ's act-order is stored (as in AutoGPTQ): the columns are quantized in a
/// permuted order and grouped in that order, so a group's columns are scattered over the row.
/// Keeping the codes in the original column order means the input vector needs no
/// permutation; the price is that a kernel looks up each column's group instead of computing
/// `c / group_width`.

#include <cstdint>
#include <string>
#include <vector>

#include "common/quant/quant_scheme.h"

namespace nanoserve::quant {

/// \brief A weight-only quantized matrix (see the file comment for the layout).
struct QuantizedLinear {
  int rows = 0;                  ///< output features
  int cols = 0;                  ///< input features
  QuantScheme scheme;            ///< bits, group size, symmetric
  std::vector<uint8_t> qweight;  ///< (rows, row_bytes()) packed codes
  std::vector<uint16_t> scales;  ///< (rows, groups()) fp16 bits
  std::vector<uint16_t> zeros;   ///< (rows, groups()) fp16 bits; empty when symmetric
  std::vector<int32_t> g_idx;    ///< (cols) group of each column, or empty

  /// \brief Groups per row (`scheme.groups(cols)`).
  int groups() const { return scheme.groups(cols); }
  /// \brief Bytes of one packed row.
  int64_t row_bytes() const;
  /// \brief The group of column `col`: `g_idx[col]`, or `col / group_width` without g_idx.
  int group_of(int col) const {
    return g_idx.empty() ? col / scheme.group_width(cols) : g_idx[size_t(col)];
  }
  /// \brief The code of element (`row`, `col`).
  int code(int row, int col) const;
  /// \brief Scale and zero point of (`row`, `group`) as fp32.
  GroupParams params(int row, int group) const;
  /// \brief W' (rows, cols) row-major in fp32, columns in the original order.
  std::vector<float> dequantize() const;
  /// \brief Bytes of the stored representation (codes + scales + zeros + g_idx).
  int64_t bytes() const;
  /// \brief Throws `LoadError(file, name + "." + part, …)` if a buffer has the wrong size, a
  /// scale is not finite and positive, a zero point is not an integer in the code range, or a
  /// g_idx entry is outside [0, groups()).
  void validate(const std::string& file, const std::string& name) const;
};

/// \brief Assembles a `QuantizedLinear` from codes (rows, cols) in the original column order
/// and the parameters (rows, groups) row-major; `g_idx` as in the struct. The scales and zeros
/// must be exact fp16 values (as `choose_group_params` returns them).
QuantizedLinear make_quantized_linear(int rows, int cols, const QuantScheme& scheme,
                                      const std::vector<uint8_t>& codes,
                                      const std::vector<GroupParams>& params,
                                      std::vector<int32_t> g_idx = {});

}  // namespace nanoserve::quant
