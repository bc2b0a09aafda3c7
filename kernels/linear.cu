// launch_linear: GEMV for a few rows (decode), GEMM for many (prefill) — on tensor cores when
// weights and activations are both fp16 or both bf16; see kLinearGemvMaxRows in linear.h for why
// the switch sits at 16 rows.
#include "kernels/linear.h"

#include <type_traits>

#include "kernels/gemm.h"
#include "kernels/gemm_tc.h"
#include "kernels/gemv.h"

namespace nanoserve {

static_assert(kLinearGemvMaxRows <= kGemvMaxBatch,
              "launch_linear's GEMV path should read W once: keep the switch within one v03 pass");

template <typename T, typename A, typename O>
void launch_linear(const T* w, const nondeduced_t<A>* x, nondeduced_t<O>* y, int m, int n, int k,
                   cudaStream_t stream, Epilogue epilogue) {
  if (check_linear_args("launch_linear", w, x, y, m, n, k)) return;
  // Tensor cores need both operands in the same 16-bit type; their output is fp32 or that type.
  constexpr bool kTensorCores = !std::is_same<T, float>::value && std::is_same<A, T>::value &&
                                (std::is_same<O, float>::value || std::is_same<O, T>::value);
  if (m <= kLinearGemvMaxRows) {
    launch_gemv<T, A, O>(w, x, y, m, n, k, stream, epilogue);
  } else if constexpr (kTensorCores) {
    launch_gemm_tc<T, O>(w, x, y, m, n, k, stream, epilogue);
  } else {
    launch_gemm<T, A, O>(w, x, y, m, n, k, stream, epilogue);
  }
}

NANOSERVE_DENSE_LINEAR_INSTANTIATE(launch_linear, )

}  // namespace nanoserve
