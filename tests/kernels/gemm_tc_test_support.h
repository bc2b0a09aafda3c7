#pragma once
/// \file
/// \brief What the tensor-core GEMM tests (test_gemm_tc.cpp, test_qgemm_tc.cpp) share: the
/// (input, output) type pairs they run over, their names, and the tolerance each output needs.

#include <string>
#include <type_traits>

#include <gtest/gtest.h>

#include "common/tolerances.h"
#include "kernels/dtype.cuh"

namespace nanoserve::testing {

/// \brief Input type T and output type OutT of one instantiation.
template <typename T_, typename OutT_>
struct TypePair {
  using T = T_;      ///< input type of X and W
  using OutT = OutT_;  ///< output type of Y
};
/// \brief Every pair `launch_gemm_tc` / `launch_qgemm_tc` is built for.
using GemmTcTypePairs = ::testing::Types<TypePair<__half, float>, TypePair<__half, __half>,
                                         TypePair<__nv_bfloat16, float>,
                                         TypePair<__nv_bfloat16, __nv_bfloat16>>;
/// \brief Test names such as "fp16_to_fp32".
struct TypePairNames {
  /// \brief The name of pair P.
  template <typename P>
  static std::string GetName(int) {
    return std::string(dtype_name(dtype_of<typename P::T>())) + "_to_" +
           dtype_name(dtype_of<typename P::OutT>());
  }
};

/// \brief The output rounding decides the tolerance (common/tolerances.h): none for fp32, one
/// rounding to fp16 or bf16 otherwise.
template <typename OutT>
Tolerance gemm_tc_output_tolerance() {
  if constexpr (std::is_same<OutT, float>::value) {
    return tol::kFp32DotReorder;
  } else if constexpr (std::is_same<OutT, __half>::value) {
    return tol::kGemmOutFp16;
  } else {
    return tol::kGemmOutBf16;
  }
}

}  // namespace nanoserve::testing
