// launch_gguf_linear: the GGUF GEMV for up to kGgufLinearGemvMaxRows rows (decode), dequantize into
// scratch + the dense launch_linear beyond (prefill; tensor cores for fp16/bf16). See
// kernels/gguf_linear.h.
#include <cstddef>
#include <cstdint>
#include <string>

#include "kernels/gguf_blocks.cuh"
#include "kernels/gguf_linear.h"
#include "kernels/kernel_args.h"
#include "kernels/linear.h"

namespace nanoserve {

template <typename A, typename O>
void launch_gguf_linear(const GgufWeightView& w, const nondeduced_t<A>* x, nondeduced_t<O>* y,
                        int batch, nondeduced_t<A>* scratch, std::size_t scratch_elements,
                        cudaStream_t stream, Epilogue epilogue) {
  constexpr const char* kOp = "launch_gguf_linear";
  if (check_gguf_linear_args(kOp, w, x, y, batch, sizeof(A), sizeof(O), epilogue)) return;
  if (batch <= kGgufLinearGemvMaxRows) {
    launch_gguf_gemv<A, O>(w, x, y, batch, stream, epilogue);
    return;
  }
  const std::size_t need = static_cast<std::size_t>(w.rows) * static_cast<std::size_t>(w.cols);
  kargs::require(scratch != nullptr || need == 0, kOp,
                 "scratch is null for " + std::to_string(batch) + " rows (more than " +
                     std::to_string(kGgufLinearGemvMaxRows) + " dequantize W into it)");
  kargs::require(scratch_elements >= need, kOp,
                 "scratch_elements = " + std::to_string(scratch_elements) + " < rows x cols = " +
                     std::to_string(need));
  launch_gguf_dequantize<A>(w, scratch, stream);
  launch_linear<A, A, O>(scratch, x, y, batch, w.rows, w.cols, stream, epilogue);
}

#define NANOSERVE_GGUF_LINEAR_INSTANTIATE(A, O)                                                  \
  template void launch_gguf_linear<A, O>(const GgufWeightView&, const A*, O*, int, A*,          \
                                         std::size_t, cudaStream_t, Epilogue);
NANOSERVE_GGUF_LINEAR_INSTANTIATE(float, float)
NANOSERVE_GGUF_LINEAR_INSTANTIATE(__half, __half)
NANOSERVE_GGUF_LINEAR_INSTANTIATE(__nv_bfloat16, __nv_bfloat16)
#undef NANOSERVE_GGUF_LINEAR_INSTANTIATE

}  // namespace nanoserve
