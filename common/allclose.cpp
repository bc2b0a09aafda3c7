#include "common/allclose.h"

#include <cmath>
#include <cstdio>

namespace nanoserve {

std::string CloseResult::summary() const {
  char buf[256];
  if (ok) {
    std::snprintf(buf, sizeof buf, "ok: max_abs=%.3g max_rel=%.3g", max_abs_err, max_rel_err);
  } else {
    std::snprintf(buf, sizeof buf,
                  "%lld bad: first at [%lld] got=%.9g want=%.9g; max_abs=%.3g max_rel=%.3g",
                  static_cast<long long>(num_bad), static_cast<long long>(first_bad),
                  first_bad_got, first_bad_want, max_abs_err, max_rel_err);
  }
  return buf;
}

namespace {
template <typename T>
CloseResult compare(const T* got, const T* want, size_t n, Tolerance tol) {
  CloseResult r;
  for (size_t i = 0; i < n; ++i) {
    const double g = got[i], w = want[i];
    bool bad;
    double abs_err;
    if (std::isnan(g) || std::isnan(w) || std::isinf(g) || std::isinf(w)) {
      // Non-finite values only match themselves exactly (same infinity); NaN never matches.
      bad = !(g == w);
      abs_err = bad ? INFINITY : 0.0;
    } else {
      abs_err = std::fabs(g - w);
      bad = abs_err > tol.atol + tol.rtol * std::fabs(w);
    }
    const double rel_err = abs_err / std::fmax(std::fabs(w), 1e-30);
    if (abs_err > r.max_abs_err) r.max_abs_err = abs_err;
    if (rel_err > r.max_rel_err) r.max_rel_err = rel_err;
    if (bad) {
      if (r.first_bad < 0) {
        r.first_bad = static_cast<int64_t>(i);
        r.first_bad_got = g;
        r.first_bad_want = w;
      }
      ++r.num_bad;
      r.ok = false;
    }
  }
  return r;
}
}  // namespace

CloseResult allclose(const float* got, const float* want, size_t n, Tolerance tol) {
  return compare(got, want, n, tol);
}

CloseResult allclose(const double* got, const double* want, size_t n, Tolerance tol) {
  return compare(got, want, n, tol);
}

CloseResult allclose(const std::vector<float>& got, const std::vector<float>& want,
                     Tolerance tol) {
  if (got.size() != want.size()) {
    CloseResult r;
    r.ok = false;
    r.num_bad = -1;
    r.first_bad = static_cast<int64_t>(std::min(got.size(), want.size()));
    return r;
  }
  return compare(got.data(), want.data(), got.size(), tol);
}

}  // namespace nanoserve
