#pragma once
/// \file
/// \brief What the linear-layer kernels (GEMV, GEMM, `launch_linear`) share: the epilogue that
/// stores or accumulates the result, and the argument checks every launcher runs first.
///
/// Layout shared by all of them (llama2.c's `matmul`, PyTorch's `nn.Linear`):
/// ```
///   W (out_dim, in_dim)  row-major, storage type T (fp32 / fp16 / bf16)
///   X (rows, in_dim)     fp32, row-major: one input vector per row (token or sequence)
///   Y (rows, out_dim)    fp32, row-major: Y = X Wᵀ, i.e. y_r = W x_r for every row r
/// ```
/// Every product is accumulated in fp32 (DESIGN.md, "Numbers and precision").

#include <cstdint>
#include <stdexcept>
#include <string>

#include "kernels/cuda_compat.h"

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
