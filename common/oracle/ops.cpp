#include "common/oracle/ops.h"

#include <cmath>
#include <string>

#include "common/error.h"
#include "common/oracle/eigen_maps.h"

namespace nanoserve::oracle {

void embedding(const float* table, int vocab_size, int dim, const int* tokens, int n,
               float* out) {
  ConstMatrixMap tab(table, vocab_size, dim);  // (vocab_size, dim)
  MatrixMap o(out, n, dim);                    // (n, dim)
  for (int t = 0; t < n; ++t) {
    if (tokens[t] < 0 || tokens[t] >= vocab_size) {
      throw InvalidArgument("oracle::embedding: token " + std::to_string(tokens[t]) +
                            " at index " + std::to_string(t) + " is outside [0, " +
                            std::to_string(vocab_size) + ")");
    }
    o.row(t) = tab.row(tokens[t]);
  }
}

void rmsnorm(const float* x, const float* gain, int rows, int dim, float eps, float* out) {
  ConstMatrixMap in(x, rows, dim);  // (rows, dim)
  ConstVectorMap g(gain, dim);      // (dim)
  MatrixMap o(out, rows, dim);      // (rows, dim), may be `in`
  for (int r = 0; r < rows; ++r) {
    // The scale is computed before the row is overwritten, which makes in-place use safe.
    const float inv_rms = 1.0f / std::sqrt(in.row(r).squaredNorm() / float(dim) + eps);
    o.row(r) = (in.row(r) * inv_rms).cwiseProduct(g.transpose());
  }
}

void matmul(const float* x, const float* w, int rows, int in_dim, int out_dim, float* y) {
  ConstMatrixMap X(x, rows, in_dim);     // (rows, in_dim)
  ConstMatrixMap W(w, out_dim, in_dim);  // (out_dim, in_dim)
  MatrixMap Y(y, rows, out_dim);         // (rows, out_dim)
  Y.noalias() = X * W.transpose();
}

void gemv(const float* w, const float* x, int out_dim, int in_dim, float* y) {
  ConstMatrixMap W(w, out_dim, in_dim);  // (out_dim, in_dim)
  ConstVectorMap X(x, in_dim);           // (in_dim)
  VectorMap Y(y, out_dim);               // (out_dim)
  Y.noalias() = W * X;
}

void softmax(const float* x, int rows, int n, float* out) {
  ConstMatrixMap in(x, rows, n);  // (rows, n)
  MatrixMap o(out, rows, n);      // (rows, n), may be `in`
  for (int r = 0; r < rows; ++r) {
    // Subtracting the max makes every exponent <= 0: no overflow, and the largest term is 1 so
    // the sum cannot underflow to zero either.
    const float max = in.row(r).maxCoeff();
    o.row(r) = (in.row(r).array() - max).exp();
    o.row(r) /= o.row(r).sum();
  }
}

void swiglu(const float* gate, const float* up, int n, float* out) {
  for (int i = 0; i < n; ++i) {
    const float g = gate[i];
    out[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void residual_add(float* x, const float* delta, int n) {
  VectorMap(x, n) += ConstVectorMap(delta, n);
}

}  // namespace nanoserve::oracle
