// launch_linear: GEMV for a few rows (decode), GEMM for many (prefill); see kLinearGemvMaxRows
// in linear.h for why the switch sits at 16 rows.
#include "kernels/linear.h"

#include "kernels/gemm.h"
#include "kernels/gemv.h"

namespace nanoserve {

static_assert(kLinearGemvMaxRows <= kGemvMaxBatch,
              "launch_linear's GEMV path should read W once: keep the switch within one v03 pass");

template <typename T, typename A, typename O>
void launch_linear(const T* w, const nondeduced_t<A>* x, nondeduced_t<O>* y, int m, int n, int k,
                   cudaStream_t stream, Epilogue epilogue) {
  if (check_linear_args("launch_linear", w, x, y, m, n, k)) return;
  if (m <= kLinearGemvMaxRows) {
    launch_gemv<T, A, O>(w, x, y, m, n, k, stream, epilogue);
  } else {
    launch_gemm<T, A, O>(w, x, y, m, n, k, stream, epilogue);
  }
}

NANOSERVE_DENSE_LINEAR_INSTANTIATE(launch_linear, )

}  // namespace nanoserve
