#pragma once
/// \file
/// \brief How a weight becomes an integer code: the quantization scheme (bits, group size,
/// symmetric or with a zero point) and the scalar grid every method here shares (RTN, GPTQ and
/// AWQ differ in *which* weights they hand to this grid, never in the grid itself).
///
/// A row of W (out, in) is cut along the input dimension into groups of `group_size` columns;
/// each (row, group) has its own fp16 scale `s` (and zero point `z`). With `b` bits and codes
/// `q ∈ [0, 2^b − 1]`:
///
///     dequantized value  w' = s · (q − z)
///
///     symmetric   z = 2^(b-1) (implicit, not stored)   s = max|w| / (2^(b-1) − 1)
///                 codes used: z − (2^(b-1) − 1) … z + (2^(b-1) − 1)   (INT4: 1..15, INT8: 1..255)
///     asymmetric  range [lo, hi] = [min(min w, 0), max(max w, 0)]
///                 s = (hi − lo) / (2^b − 1)   z = round(−lo / s) ∈ [0, 2^b − 1] (stored in fp16)
///
/// The range always contains 0 (as in GPTQ's reference quantizer), so a zero weight stays
/// exactly zero. Two choices make the bound `|w − w'| ≤ s/2` hold for every element, with the
/// scale as stored:
///  - the scale is rounded *up* to the next fp16 value (`fp16_round_up`), so the grid always
///    spans the group's range and no element is clamped;
///  - `q = round(w / s) + z`, clamped to the code range only as a guard.
///
/// **Tie rule.** `round` is round-half-to-even (`std::nearbyint` in the default rounding mode),
/// which is what `torch.round` does in the GPTQ and AWQ reference implementations: a weight
/// exactly halfway between two grid points (w/s = 2.5) gets the even code offset (2). Ties are
/// real here — bf16-trained weights and power-of-two scales produce them — so two
/// implementations must agree on this rule to produce identical codes.

#include <cstdint>
#include <string>

namespace nanoserve::quant {

/// \brief The format parameters of a quantized linear layer.
struct QuantScheme {
  int bits = 4;          ///< 4 (INT4, two codes per byte) or 8 (INT8)
  int group_size = 128;  ///< columns per group (>= 1); 0 = per channel (one group per row)
  bool symmetric = true;  ///< true: implicit zero point 2^(bits-1); false: a stored zero point

  /// \brief Largest code, `2^bits − 1`.
  int max_code() const { return (1 << bits) - 1; }
  /// \brief The implicit zero point of the symmetric scheme, `2^(bits-1)`.
  int symmetric_zero() const { return 1 << (bits - 1); }
  /// \brief Width of a group in a row of `cols` columns (`cols` for per-channel, and for a
  /// group size larger than the row).
  int group_width(int cols) const {
    return group_size == 0 || group_size > cols ? cols : group_size;
  }
  /// \brief Groups per row: `ceil(cols / group_width)`; the last group may be narrower
  /// (e.g. stories260K's hidden width 172 = 5·32 + 12).
  int groups(int cols) const {
    const int g = group_width(cols);
    return g == 0 ? 0 : (cols + g - 1) / g;
  }
  /// \brief Throws `InvalidArgument` unless bits ∈ {4, 8} and group_size >= 0.
  void validate() const;
  /// \brief A short label, e.g. "int4-g128-sym", "int8-ch-asym".
  std::string label() const;
};

/// \brief The scale and zero point of one (row, group), as fp32 copies of the stored fp16s.
struct GroupParams {
  float scale = 1.0f;  ///< s > 0, exactly an fp16 value
  float zero = 0.0f;   ///< z, an integer in [0, max_code]
};

/// \brief The smallest fp16 value >= `x` (x finite, >= 0), as its bit pattern. Throws
/// `InvalidArgument` when `x` exceeds the largest finite fp16 (65504).
uint16_t fp16_round_up(float x);
/// \brief `x` rounded to the nearest fp16 (ties to even), as its bit pattern (inf when too big).
uint16_t fp16_from_float(float x);

/// \brief The scale and zero point of the group `w[0 .. n-1]` under `scheme` (see the file
/// comment). A group of zeros gets scale 1 (any scale represents it exactly).
GroupParams choose_group_params(const float* w, int n, const QuantScheme& scheme);

/// \brief The code of `w`: `clamp(round_half_even(w / s) + z, 0, max_code)`.
int quantize_code(float w, const GroupParams& p, int max_code);

/// \brief The value of a code: `s · (q − z)`, computed in fp32.
inline float dequantize_code(int q, const GroupParams& p) {
  return p.scale * (float(q) - p.zero);
}

}  // namespace nanoserve::quant
