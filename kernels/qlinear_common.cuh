#pragma once
/// \file
/// \brief What the weight-only quantized linear kernels (W8A16 / W4A16 GEMV, GEMM and
/// `launch_quant_linear`) share: the device view of a quantized weight, its argument checks, and
/// the one-element dequantization every general (any shape, act-order) code path uses, as the
/// operand loader `QuantWeights` of the GEMV and GEMM kernels.
///
/// The stored format is chapter 5's `QuantizedLinear` (common/quant/quantized_linear.h); the
/// kernels stay a leaf of the project, so they see it only through `QuantizedWeightView`, which
/// the engine fills with device copies of the same arrays:
/// ```
///   qweight  (rows, row_bytes)  uint8  packed codes, columns in the ORIGINAL order
///                                      INT8: one code per byte; INT4: two per byte, element 2k
///                                      in the low nibble of byte k, 2k+1 in the high nibble;
///                                      every row starts on a byte boundary
///   scales   (rows, groups)     fp16   s > 0
///   zeros    (rows, groups)     fp16   integer zero points z; null = symmetric, z = 2^(bits-1)
///   g_idx    (cols)             int32  group of each column (GPTQ act-order);
///                                      null: column c is in group c / group_size
///
///   W[r, c] = s[r, g] · (code[r, c] − z[r, g]),   g = g_idx ? g_idx[c] : c / group_size
/// ```
/// Groups run along the input dimension; the last one is narrower when `group_size` does not
/// divide `cols` (stories260K's hidden width 172 = 5·32 + 12).
///
/// Activations x and y are in the activation type A (fp32, fp16 or bf16; y may be fp32 for the
/// logits), so with fp16/bf16 activations these are true W8A16 / W4A16 kernels; every product is
/// accumulated in fp32, x widened as it is loaded, y rounded once when it is stored.
/// The dequantized value `s · (q − z)` is exact in fp32 (an 11-bit fp16 mantissa times an
/// integer of at most 9 bits), so a kernel multiplies exactly the numbers that the oracle run on
/// `QuantizedLinear::dequantize()` multiplies; only the order of the additions differs.

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "kernels/cuda_compat.h"
#include "kernels/dtype.cuh"
#include "kernels/kernel_args.h"
#include "kernels/linear_common.cuh"

namespace nanoserve {

/// \brief A device-side view of a weight-only quantized matrix W (rows, cols) (layout: see the
/// file comment). Non-owning; trivially copyable, so kernels take it by value.
///
/// Fill it from a `quant::QuantizedLinear` q uploaded to the device: `bits = q.scheme.bits`,
/// `group_size = q.scheme.group_width(q.cols)` (per-channel becomes `cols`: the view has no
/// "0 = per channel" convention), `zeros` null when `q.scheme.symmetric`, `g_idx` null when
/// `q.g_idx` is empty; the fp16 bit patterns of `scales` / `zeros` are uploaded as they are.
struct QuantizedWeightView {
  const std::uint8_t* qweight = nullptr;  ///< (rows, row_bytes()) packed codes
  const __half* scales = nullptr;         ///< (rows, groups()) fp16 scales
  const __half* zeros = nullptr;          ///< (rows, groups()) fp16 zero points, or null
  const std::int32_t* g_idx = nullptr;    ///< (cols) group of each column, or null
  int rows = 0;                           ///< output features (rows of W)
  int cols = 0;                           ///< input features (columns of W)
  int bits = 4;                           ///< 4 or 8
  int group_size = 0;                     ///< columns per group, >= 1 (per channel: cols)

  /// \brief Bytes of one packed row: `cols` for INT8, `ceil(cols / 2)` for INT4.
  __host__ __device__ int row_bytes() const { return bits == 8 ? cols : (cols + 1) / 2; }
  /// \brief Groups per row: `ceil(cols / group_size)`.
  __host__ __device__ int groups() const { return (cols + group_size - 1) / group_size; }
};

/// \brief Validates a quantized linear launch `Y = X Wᵀ` with X (batch, cols), Y (batch, rows);
/// throws std::invalid_argument naming `op`, the field and its value.
///
/// Checked: sizes >= 0, bits 4 or 8, group_size >= 1, non-null buffers where data is read or
/// written, and the alignment every element access needs (fp16 arrays on 2 bytes, g_idx on 4, x
/// and y on their element size: `x_align` / `y_align`, 4 for fp32, 2 for fp16/bf16). Not checkable on the host, and so the caller's contract (QuantizedLinear::validate
/// checks it when a model is loaded): g_idx entries in [0, groups()), zero points in the code
/// range. `batch == 0` or `rows == 0` is a valid empty launch; `cols == 0` is an empty sum
/// (Y = 0, or Y unchanged when accumulating).
/// \return true when there is nothing to launch
inline bool check_quant_linear_args(const char* op, const QuantizedWeightView& w, const void* x,
                                    const void* y, int batch, std::size_t x_align = 4,
                                    std::size_t y_align = 4) {
  const auto fail = [op](const std::string& what) {
    throw std::invalid_argument(std::string(op) + ": " + what);
  };
  const auto misaligned = [](const void* p, std::uintptr_t n) {
    return reinterpret_cast<std::uintptr_t>(p) % n != 0;
  };
  if (w.bits != 4 && w.bits != 8) fail("bits = " + std::to_string(w.bits) + " must be 4 or 8");
  if (w.group_size < 1) {
    fail("group_size = " + std::to_string(w.group_size) +
         " must be >= 1 (per channel: group_size = cols)");
  }
  if (batch < 0) fail("batch = " + std::to_string(batch) + " must be >= 0");
  if (w.rows < 0) fail("rows = " + std::to_string(w.rows) + " must be >= 0");
  if (w.cols < 0) fail("cols = " + std::to_string(w.cols) + " must be >= 0");
  if (batch == 0 || w.rows == 0) return true;
  if (y == nullptr) fail("y is null");
  if (misaligned(y, y_align)) fail("y is not " + std::to_string(y_align) + "-byte aligned");
  if (w.cols == 0) return false;
  if (w.qweight == nullptr) fail("qweight is null");
  if (w.scales == nullptr) fail("scales is null");
  if (x == nullptr) fail("x is null");
  if (misaligned(w.scales, 2)) fail("scales is not 2-byte aligned");
  if (misaligned(w.zeros, 2)) fail("zeros is not 2-byte aligned");
  if (misaligned(w.g_idx, 4)) fail("g_idx is not 4-byte aligned");
  if (misaligned(x, x_align)) fail("x is not " + std::to_string(x_align) + "-byte aligned");
  return false;
}

/// \brief Instantiates the quantized launcher `name` (prefix `pre...`: nothing, or `int,` for a
/// version launcher) for every (activation, output) pair of NANOSERVE_FOR_EACH_ACT_OUT_PAIR.
#define NANOSERVE_QUANT_LINEAR_INSTANTIATE(name, ...)                                        \
  template void name<float, float>(__VA_ARGS__ const QuantizedWeightView&, const float*,    \
                                   float*, int, cudaStream_t, Epilogue);                    \
  template void name<__half, __half>(__VA_ARGS__ const QuantizedWeightView&, const __half*, \
                                     __half*, int, cudaStream_t, Epilogue);                 \
  template void name<__half, float>(__VA_ARGS__ const QuantizedWeightView&, const __half*,  \
                                    float*, int, cudaStream_t, Epilogue);                   \
  template void name<__nv_bfloat16, __nv_bfloat16>(__VA_ARGS__ const QuantizedWeightView&,  \
                                                   const __nv_bfloat16*, __nv_bfloat16*,    \
                                                   int, cudaStream_t, Epilogue);            \
  template void name<__nv_bfloat16, float>(__VA_ARGS__ const QuantizedWeightView&,          \
                                           const __nv_bfloat16*, float*, int, cudaStream_t, \
                                           Epilogue);

/// \brief Instantiates the quantized launcher `name` for fp32 activations only (the numbered
/// versions kept for comparison; see NANOSERVE_DENSE_LINEAR_INSTANTIATE_FP32).
#define NANOSERVE_QUANT_LINEAR_INSTANTIATE_FP32(name, ...)                                 \
  template void name<float, float>(__VA_ARGS__ const QuantizedWeightView&, const float*,  \
                                   float*, int, cudaStream_t, Epilogue);

/// \brief Defines the public quantized launcher `name` (`launch_qgemv_v01`, `launch_qgemm`, …:
/// w, x, y, rows, stream, epilogue) as `impl<version>("name", w, x, …)`, one line per version
/// for both quantized families (as NANOSERVE_DENSE_LINEAR_LAUNCHER for the dense ones),
/// instantiated by `instantiate` (NANOSERVE_QUANT_LINEAR_INSTANTIATE or its _FP32 form).
#define NANOSERVE_QUANT_LINEAR_LAUNCHER(name, impl, version, instantiate)                \
  template <typename A, typename O>                                                     \
  void name(const QuantizedWeightView& w, const nondeduced_t<A>* x, nondeduced_t<O>* y,  \
            int rows,                                                                   \
            cudaStream_t stream, Epilogue epilogue) {                                   \
    impl<version>(#name, w, x, y, rows, stream, epilogue);                              \
  }                                                                                     \
  instantiate(name, )

/// \brief Defines `name(version, w, x, …)`, the public quantized launcher of a run-time
/// version 1..`count` (`impl<version>`; any other number throws std::invalid_argument).
#define NANOSERVE_QUANT_LINEAR_VERSION_LAUNCHER(name, impl, count)                             \
  template <typename A, typename O>                                                           \
  void name(int version, const QuantizedWeightView& w, const nondeduced_t<A>* x,             \
            nondeduced_t<O>* y, int rows,                                                     \
            cudaStream_t stream, Epilogue epilogue) {                                         \
    kargs::run_version<count>(#name, version, [&](auto v) {                                   \
      impl<decltype(v)::value>(#name, w, x, y, rows, stream, epilogue);                       \
    });                                                                                       \
  }                                                                                           \
  NANOSERVE_QUANT_LINEAR_INSTANTIATE_FP32(name, int, )

/// \brief The code of element (`row`, `col`) (INT4: low nibble for even columns).
__device__ __forceinline__ int quant_code(const QuantizedWeightView& w, int row, int col) {
  const std::uint8_t* q_row = w.qweight + static_cast<std::int64_t>(row) * w.row_bytes();
  if (w.bits == 8) return q_row[col];
  const int byte = q_row[col >> 1];
  return (col & 1) ? byte >> 4 : byte & 0x0F;
}

/// \brief The zero point of (`row`, `group`): the stored one, or 2^(bits-1) when symmetric.
__device__ __forceinline__ float quant_zero(const QuantizedWeightView& w, int row, int group) {
  if (w.zeros == nullptr) return static_cast<float>(1 << (w.bits - 1));
  return to_float(w.zeros[static_cast<std::int64_t>(row) * w.groups() + group]);
}

/// \brief The scale of (`row`, `group`).
__device__ __forceinline__ float quant_scale(const QuantizedWeightView& w, int row, int group) {
  return to_float(w.scales[static_cast<std::int64_t>(row) * w.groups() + group]);
}

/// \brief W[row, col] = s · (q − z) in fp32 (exact), looking up the column's group through g_idx
/// when there is one. One element at a time: the general path, for any shape and act-order.
__device__ __forceinline__ float dequantize_element(const QuantizedWeightView& w, int row,
                                                    int col) {
  const int group = w.g_idx != nullptr ? w.g_idx[col] : col / w.group_size;
  const float q = static_cast<float>(quant_code(w, row, col));
  return quant_scale(w, row, group) * (q - quant_zero(w, row, group));
}

/// \brief The operand loader of the quantized linear kernels (see DenseWeights): W dequantized
/// one element at a time, for any shape and act-order. The GEMM kernels and GEMV v01/v02 are
/// the dense kernels over this loader; so is the general path of GEMV v03+.
struct QuantWeights : QuantizedWeightView {
  /// \brief W[row, col] = s · (q − z) in fp32 (exact).
  __device__ __forceinline__ float at(int row, int col) const {
    return dequantize_element(*this, row, col);
  }
};

}  // namespace nanoserve
