#pragma once
/// \file
/// \brief What the linear-layer kernels (GEMV, GEMM, `launch_linear`) share: the epilogue that
/// stores or accumulates the result, the argument checks every launcher runs first, and the
/// operand loader of dense weights (`DenseWeights`) that the GEMV and GEMM kernels are written
/// over — the quantized kernels are the same kernels over `QuantWeights`
/// (kernels/qlinear_common.cuh).
///
/// Layout shared by all of them (llama2.c's `matmul`, PyTorch's `nn.Linear`):
/// ```
///   W (out_dim, in_dim)  row-major, storage type T (fp32 / fp16 / bf16)
///   X (rows, in_dim)     activation type A (fp32 / fp16 / bf16), row-major: one input vector
///                      per row (token or sequence)
///   Y (rows, out_dim)    output type O (A, or fp32 for the classifier's logits), row-major:
///                      Y = X Wᵀ, i.e. y_r = W x_r for every row r
/// ```
/// Every product is accumulated in fp32 (docs/design.md, "Numbers and precision"); X is widened
/// to fp32 as it is loaded and Y rounded once, when it is stored.

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "kernels/cuda_compat.h"
#include "kernels/dtype.cuh"
#include "kernels/kernel_args.h"

namespace nanoserve {

/// \brief What a linear kernel does with its result.
///
/// `kAccumulate` fuses the residual add that follows the attention output (`wo`) and MLP down
/// (`w2`) projections into the matmul: `x += W h` without a second pass over `x`.
///
/// `kSwiGLU` fuses the Llama MLP's gate into the gate+up projection. W is the two projections
/// stacked, `[W1; W3]` with 2·h rows (gate rows 0..h-1, up rows h..2h-1), and Y has h columns:
/// ```
///   Y[r][j] = silu(X[r] · W[j]) · (X[r] · W[h + j])      (silu_mul, in fp32, rounded once)
/// ```
/// so the (rows, 2·h) gate/up intermediate is never written. The kernels that support it pair
/// output j with its gate and up rows themselves (kernels/README.md, "Fusions"); the others throw.
enum class Epilogue {
  kStore,       ///< Y = X Wᵀ (Y's previous contents are never read)
  kAccumulate,  ///< Y += X Wᵀ
  kSwiGLU,      ///< Y = silu(X W[0, h)ᵀ) ⊙ X W[h, 2h)ᵀ, W with 2h rows, Y with h columns
};

/// \brief `silu(g) · u = g / (1 + e^-g) · u` in fp32: the formula of `oracle::swiglu`, term for
/// term. The SwiGLU kernel (kernels/swiglu.cu) and every fused SwiGLU epilogue call this one
/// function, so in fp32 the fused and unfused MLPs give bitwise the same values.
__device__ __forceinline__ float silu_mul(float g, float u) { return g / (1.0f + expf(-g)) * u; }

/// \brief Columns of Y for a W of `w_rows` rows: `w_rows / 2` under kSwiGLU, else `w_rows`.
__host__ __device__ __forceinline__ int epilogue_out_features(int w_rows, Epilogue epilogue) {
  return epilogue == Epilogue::kSwiGLU ? w_rows / 2 : w_rows;
}

/// \brief Checks the epilogue of a launch with W of `w_rows` rows: kSwiGLU needs a kernel that
/// supports it (`swiglu_ok`) and an even `w_rows` (gate and up halves). Throws
/// std::invalid_argument naming `op` otherwise.
inline void check_epilogue(const char* op, int w_rows, Epilogue epilogue, bool swiglu_ok) {
  if (epilogue != Epilogue::kSwiGLU) return;
  if (!swiglu_ok) {
    throw std::invalid_argument(std::string(op) + ": this version has no SwiGLU epilogue (the "
                                "versions the engine runs do: GEMV v03+, GEMM v03, tensor-core "
                                "GEMM v02+)");
  }
  if (w_rows % 2 != 0) {
    throw std::invalid_argument(std::string(op) + ": a SwiGLU epilogue needs W = [gate; up] "
                                "with an even number of rows, got " + std::to_string(w_rows));
  }
}

/// \brief Writes one output element of storage type Y according to `epilogue` (kStore or
/// kAccumulate; a kSwiGLU output is written by its kernel), rounding once: kStore writes
/// `Y(value)`, kAccumulate loads the old value, widens it, adds `value` in fp32 and rounds the
/// sum (for Y = float: exactly `*out += value`).
template <typename Y>
__host__ __device__ __forceinline__ void apply_epilogue(Y* out, float value, Epilogue epilogue) {
  if (epilogue == Epilogue::kAccumulate) {
    *out = from_float<Y>(to_float(*out) + value);
  } else {
    *out = from_float<Y>(value);  // never read: a kStore output may hold garbage beforehand
  }
}

/// \brief The operand loader of the dense linear kernels: W (rows, cols) row-major in storage
/// type T, read one element at a time as fp32. A loader is what the GEMV and GEMM kernels are
/// written over: public `rows` and `cols`, and `at(row, col)` = W[row, col] in fp32.
template <typename T>
struct DenseWeights {
  const T* w = nullptr;  ///< (rows, cols) row-major
  int rows = 0;          ///< output features (rows of W)
  int cols = 0;          ///< input features (columns of W)

  /// \brief W[row, col] in fp32 (exact).
  __device__ __forceinline__ float at(int row, int col) const {
    return to_float(w[static_cast<std::int64_t>(row) * cols + col]);
  }
};

/// \brief The parameter types of every dense GEMV/GEMM launcher, `(w, x, y, rows, out_dim,
/// in_dim, stream, epilogue)`, for W in storage type T, X in A and Y in O: what their explicit
/// instantiations list.
#define NANOSERVE_DENSE_LINEAR_PARAMS(T, A, O) \
  const T*, const A*, O*, int, int, int, cudaStream_t, Epilogue

/// \brief Instantiates the dense launcher `name` (prefix `pre`: nothing, or `int,` for a
/// version launcher) for W in T and every (A, O) of NANOSERVE_FOR_EACH_ACT_OUT_PAIR.
#define NANOSERVE_DENSE_LINEAR_INSTANTIATE_T(name, T, ...)                                     \
  template void name<T, float, float>(                                                        \
      __VA_ARGS__ NANOSERVE_DENSE_LINEAR_PARAMS(T, float, float));                            \
  template void name<T, __half, __half>(                                                      \
      __VA_ARGS__ NANOSERVE_DENSE_LINEAR_PARAMS(T, __half, __half));                          \
  template void name<T, __half, float>(                                                       \
      __VA_ARGS__ NANOSERVE_DENSE_LINEAR_PARAMS(T, __half, float));                           \
  template void name<T, __nv_bfloat16, __nv_bfloat16>(                                        \
      __VA_ARGS__ NANOSERVE_DENSE_LINEAR_PARAMS(T, __nv_bfloat16, __nv_bfloat16));            \
  template void name<T, __nv_bfloat16, float>(                                                \
      __VA_ARGS__ NANOSERVE_DENSE_LINEAR_PARAMS(T, __nv_bfloat16, float));

/// \brief Instantiates the dense launcher `name` for W in every storage type with fp32
/// activations only: what the numbered versions kept for comparison (tests, bench_kernels)
/// need. Only the best version of each family (and launch_linear) is instantiated for fp16/bf16
/// activations, which keeps the build from compiling every version five times over.
#define NANOSERVE_DENSE_LINEAR_INSTANTIATE_FP32(name, ...)                                   \
  template void name<float, float, float>(                                                   \
      __VA_ARGS__ NANOSERVE_DENSE_LINEAR_PARAMS(float, float, float));                       \
  template void name<__half, float, float>(                                                  \
      __VA_ARGS__ NANOSERVE_DENSE_LINEAR_PARAMS(__half, float, float));                      \
  template void name<__nv_bfloat16, float, float>(                                           \
      __VA_ARGS__ NANOSERVE_DENSE_LINEAR_PARAMS(__nv_bfloat16, float, float));

/// \brief NANOSERVE_DENSE_LINEAR_INSTANTIATE_T for every weight storage type.
#define NANOSERVE_DENSE_LINEAR_INSTANTIATE(name, ...)                    \
  NANOSERVE_DENSE_LINEAR_INSTANTIATE_T(name, float, __VA_ARGS__)         \
  NANOSERVE_DENSE_LINEAR_INSTANTIATE_T(name, __half, __VA_ARGS__)        \
  NANOSERVE_DENSE_LINEAR_INSTANTIATE_T(name, __nv_bfloat16, __VA_ARGS__)

/// \brief Defines the public dense launcher `name` (`launch_gemv_v01`, `launch_gemm`, …: the
/// parameters of NANOSERVE_DENSE_LINEAR_PARAMS) as `impl<version>("name", w, x, …)` and
/// instantiates it with `instantiate` (NANOSERVE_DENSE_LINEAR_INSTANTIATE: every weight type and
/// (activation, output) pair; NANOSERVE_DENSE_LINEAR_INSTANTIATE_FP32: fp32 activations). The
/// GEMV and GEMM families share one public shape, so each defines its launchers as one line per
/// version with this, not as copies.
#define NANOSERVE_DENSE_LINEAR_LAUNCHER(name, impl, version, instantiate)            \
  template <typename T, typename A, typename O>                                       \
  void name(const T* w, const nondeduced_t<A>* x, nondeduced_t<O>* y, int rows,      \
            int out_dim, int in_dim,                                                  \
            cudaStream_t stream, Epilogue epilogue) {                                 \
    impl<version>(#name, w, x, y, rows, out_dim, in_dim, stream, epilogue);           \
  }                                                                                   \
  instantiate(name, )

/// \brief Defines `name(version, w, x, …)`, the public dense launcher of a run-time version
/// 1..`count` (`impl<version>`; any other number throws std::invalid_argument), for every
/// weight type with fp32 activations.
#define NANOSERVE_DENSE_LINEAR_VERSION_LAUNCHER(name, impl, count)                        \
  template <typename T, typename A, typename O>                                           \
  void name(int version, const T* w, const nondeduced_t<A>* x, nondeduced_t<O>* y,       \
            int rows, int out_dim,                                                        \
            int in_dim, cudaStream_t stream, Epilogue epilogue) {                         \
    kargs::run_version<count>(#name, version, [&](auto v) {                               \
      impl<decltype(v)::value>(#name, w, x, y, rows, out_dim, in_dim, stream, epilogue);  \
    });                                                                                   \
  }                                                                                       \
  NANOSERVE_DENSE_LINEAR_INSTANTIATE_FP32(name, int, )

/// \brief Validates a linear launch; throws std::invalid_argument naming `op` and the bad value.
///
/// Negative sizes are errors. `rows == 0` or `out_dim == 0` is a valid empty launch (nothing is
/// written, pointers may be null). `in_dim == 0` is a valid empty sum: Y = 0 (or Y unchanged
/// when accumulating), W and X may then be null.
/// \return true when there is nothing to launch
inline bool check_linear_args(const char* op, const void* w, const void* x, const void* y,
                              int rows, int out_dim, int in_dim) {
  const auto fail = [op](const std::string& what) {
    throw std::invalid_argument(std::string(op) + ": " + what);
  };
  if (rows < 0) fail("rows = " + std::to_string(rows) + " must be >= 0");
  if (out_dim < 0) fail("out_dim = " + std::to_string(out_dim) + " must be >= 0");
  if (in_dim < 0) fail("in_dim = " + std::to_string(in_dim) + " must be >= 0");
  if (rows == 0 || out_dim == 0) return true;
  if (y == nullptr) fail("y is null for a (" + std::to_string(rows) + ", " +
                         std::to_string(out_dim) + ") output");
  if (in_dim > 0 && (w == nullptr || x == nullptr)) {
    fail(std::string(w == nullptr ? "w" : "x") + " is null with in_dim = " +
         std::to_string(in_dim));
  }
  return false;
}

}  // namespace nanoserve
