// launch_quant_linear: the quantized GEMV for a few rows (decode), the quantized GEMM for many
// (prefill), on tensor cores for fp16/bf16 activations; see kQuantLinearGemvMaxRows in
// qlinear.h for why the switch sits at 16 rows.
#include "kernels/qlinear.h"

#include <type_traits>

#include "kernels/gemm_tc.h"
#include "kernels/qgemm.h"
#include "kernels/qgemv.h"

namespace nanoserve {

static_assert(kQuantLinearGemvMaxRows <= kQGemvMaxBatch,
              "launch_quant_linear's GEMV path should read W once: keep the switch within a pass");

template <typename A, typename O>
void launch_quant_linear(const QuantizedWeightView& w, const nondeduced_t<A>* x,
                         nondeduced_t<O>* y, int m,
                         cudaStream_t stream, Epilogue epilogue) {
  if (check_quant_linear_args("launch_quant_linear", w, x, y, m, sizeof(A), sizeof(O))) {
    return;
  }
  // fp16/bf16 activations: the tensor-core GEMM dequantizes W's tiles into A (true W4A16).
  constexpr bool kTensorCores = !std::is_same<A, float>::value &&
                                (std::is_same<O, float>::value || std::is_same<O, A>::value);
  if (m <= kQuantLinearGemvMaxRows) {
    launch_qgemv<A, O>(w, x, y, m, stream, epilogue);
  } else if constexpr (kTensorCores) {
    launch_qgemm_tc<A, O>(w, x, y, m, stream, epilogue);
  } else {
    launch_qgemm<A, O>(w, x, y, m, stream, epilogue);
  }
}

NANOSERVE_QUANT_LINEAR_INSTANTIATE(launch_quant_linear, )

}  // namespace nanoserve
