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
///   X (rows, in_dim)     fp32, row-major: one input vector per row (token or sequence)
///   Y (rows, out_dim)    fp32, row-major: Y = X Wᵀ, i.e. y_r = W x_r for every row r
/// ```
/// Every product is accumulated in fp32 (docs/design.md, "Numbers and precision").

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
enum class Epilogue {
  kStore,       ///< Y = X Wᵀ (Y's previous contents are never read)
  kAccumulate,  ///< Y += X Wᵀ
};

/// \brief Writes one output element according to `epilogue`.
__host__ __device__ __forceinline__ void apply_epilogue(float* out, float value,
                                                        Epilogue epilogue) {
  if (epilogue == Epilogue::kAccumulate) {
    *out += value;
  } else {
    *out = value;  // never read: a kStore output may hold garbage (or NaN poison) beforehand
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
/// in_dim, stream, epilogue)`, for W in storage type T: what their explicit instantiations list.
#define NANOSERVE_DENSE_LINEAR_PARAMS(T) \
  const T*, const float*, float*, int, int, int, cudaStream_t, Epilogue

/// \brief Defines the public dense launcher `name` (`launch_gemv_v01`, `launch_gemm`, …: the
/// parameters of NANOSERVE_DENSE_LINEAR_PARAMS) as `impl<version>("name", w, x, …)` and
/// instantiates it for every storage type. The GEMV and GEMM families share one public shape,
/// so each defines its launchers as one line per version with this, not as copies.
#define NANOSERVE_DENSE_LINEAR_LAUNCHER(name, impl, version)                          \
  template <typename T>                                                               \
  void name(const T* w, const float* x, float* y, int rows, int out_dim, int in_dim,  \
            cudaStream_t stream, Epilogue epilogue) {                                 \
    impl<version>(#name, w, x, y, rows, out_dim, in_dim, stream, epilogue);           \
  }                                                                                   \
  template void name<float>(NANOSERVE_DENSE_LINEAR_PARAMS(float));                    \
  template void name<__half>(NANOSERVE_DENSE_LINEAR_PARAMS(__half));                  \
  template void name<__nv_bfloat16>(NANOSERVE_DENSE_LINEAR_PARAMS(__nv_bfloat16));

/// \brief Defines `name(version, w, x, …)`, the public dense launcher of a run-time version
/// 1..`count` (`impl<version>`; any other number throws std::invalid_argument), for every
/// storage type.
#define NANOSERVE_DENSE_LINEAR_VERSION_LAUNCHER(name, impl, count)                        \
  template <typename T>                                                                   \
  void name(int version, const T* w, const float* x, float* y, int rows, int out_dim,      \
            int in_dim, cudaStream_t stream, Epilogue epilogue) {                         \
    kargs::run_version<count>(#name, version, [&](auto v) {                               \
      impl<decltype(v)::value>(#name, w, x, y, rows, out_dim, in_dim, stream, epilogue);  \
    });                                                                                   \
  }                                                                                       \
  template void name<float>(int, NANOSERVE_DENSE_LINEAR_PARAMS(float));                   \
  template void name<__half>(int, NANOSERVE_DENSE_LINEAR_PARAMS(__half));                 \
  template void name<__nv_bfloat16>(int, NANOSERVE_DENSE_LINEAR_PARAMS(__nv_bfloat16));

/// \brief Validates a linear launch; throws std::invalid_argument naming `op` and the bad value.
///
/// Negative sizes are errors. `rows == 0` or `out_dim == 0` is a valid empty launch (nothing is
/// written, pointers may be null). `in_dim == 0` is a valid empty sum: Y = 0 (or Y unchanged
/// when accumulating), W and X may then be null.
/// \return true when there is nothing to launch
inline bool check_linear_args(const char* op, const void* w, const float* x, const float* y,
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
