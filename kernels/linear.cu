// launch_linear: GEMV for a few rows (decode), GEMM for many (prefill); see kLinearGemvMaxRows
// in linear.h for why the switch sits at 16 rows.
#include "kernels/linear.h"

#include "kernels/gemm.h"
#include "kernels/gemv.h"

namespace nanoserve {

static_assert(kLinearGemvMaxRows <= kGemvMaxBatch,
              "launch_linear's GEMV path should read W once: keep the switch within one v03 pass");

template <typename T>
void launch_linear(const T* w, const float* x, float* y, int m, int n, int k,
                   cudaStream_t stream, Epilogue epilogue) {
  if (check_linear_args("launch_linear", w, x, y, m, n, k)) return;
  if (m <= kLinearGemvMaxRows) {
    launch_gemv(w, x, y, m, n, k, stream, epilogue);
  } else {
    launch_gemm(w, x, y, m, n, k, stream, epilogue);
  }
}

template void launch_linear<float>(const float*, const float*, float*, int, int, int,
                                   cudaStream_t, Epilogue);
template void launch_linear<__half>(const __half*, const float*, float*, int, int, int,
                                    cudaStream_t, Epilogue);
template void launch_linear<__nv_bfloat16>(const __nv_bfloat16*, const float*, float*, int, int,
                                           int, cudaStream_t, Epilogue);

}  // namespace nanoserve
