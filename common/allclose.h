#pragma once
/// \file
/// \brief The one comparison helper (docs/style.md, convention 7):
/// `|got - want| <= atol + rtol*|want|` elementwise, reporting the worst errors and the first
/// bad index. It never exits; tests assert on its result and print it.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace nanoserve {

/// \brief An absolute + relative tolerance pair (llm.c's rule).
struct Tolerance {
  double atol = 0.0;  ///< absolute part
  double rtol = 0.0;  ///< relative part, scaled by |want|
};

/// \brief What `allclose` found.
struct CloseResult {
  bool ok = true;             ///< every element within tolerance (and no NaN/Inf mismatch)
  double max_abs_err = 0.0;   ///< max |got - want|
  double max_rel_err = 0.0;   ///< max |got - want| / max(|want|, tiny)
  int64_t first_bad = -1;     ///< index of the first element outside tolerance, or -1
  double first_bad_got = 0.0;   ///< got[first_bad]
  double first_bad_want = 0.0;  ///< want[first_bad]
  int64_t num_bad = 0;        ///< how many elements are outside tolerance
  /// \brief One line for test failure messages.
  std::string summary() const;
};

/// \brief Compares `n` elements of `got` against `want` (both float).
CloseResult allclose(const float* got, const float* want, size_t n, Tolerance tol);
/// \brief Same, for double-precision references.
CloseResult allclose(const double* got, const double* want, size_t n, Tolerance tol);
/// \brief Convenience overload for vectors; sizes must match (a mismatch is reported as not ok).
CloseResult allclose(const std::vector<float>& got, const std::vector<float>& want,
                     Tolerance tol);

}  // namespace nanoserve
