#pragma once
/// \file
/// \brief Helpers of the fp16/bf16-activation kernel tests (test_activation_dtype*.cpp): values
/// rounded to an activation type A as the oracle sees them, device buffers of them, and the
/// tolerance of one rounding to A (tol::kKernelStoreFp16 / kKernelStoreBf16).

#include <gtest/gtest.h>

#include <cstddef>
#include <string>
#include <vector>

#include "common/allclose.h"
#include "common/tolerances.h"
#include "kernels/device_buffer.h"
#include "kernels/dtype.cuh"

namespace nanoserve::testing {

/// \brief The tolerance of a kernel output rounded once to A (fp16 or bf16).
template <typename A>
Tolerance store_tolerance() {
  return dtype_of<A>() == DType::kF16 ? tol::kKernelStoreFp16 : tol::kKernelStoreBf16;
}

/// \brief `values` rounded to A (nearest even) and widened back: what the oracle sees of an A
/// input.
template <typename A>
std::vector<float> rounded(const std::vector<float>& values) {
  std::vector<float> out(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) out[i] = to_float(from_float<A>(values[i]));
  return out;
}

/// \brief A device buffer holding `values` rounded to A.
template <typename A>
DeviceBuffer<A> upload_as(const std::vector<float>& values) {
  std::vector<A> host(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) host[i] = from_float<A>(values[i]);
  return DeviceBuffer<A>(host);
}

/// \brief The device values widened to fp32.
template <typename A>
std::vector<float> download(const DeviceBuffer<A>& d) {
  const std::vector<A> host = d.to_host();
  std::vector<float> out(host.size());
  for (std::size_t i = 0; i < host.size(); ++i) out[i] = to_float(host[i]);
  return out;
}

/// \brief Expects `got` within `tol` of `want`; on failure prints `context` and the worst and
/// first-bad elements.
inline void expect_within(const std::vector<float>& got, const std::vector<float>& want,
                          Tolerance tol, const std::string& context) {
  const CloseResult r = allclose(got, want, tol);
  EXPECT_TRUE(r.ok) << context << ": " << r.summary();
}

}  // namespace nanoserve::testing
