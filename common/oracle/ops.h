#pragma once
/// \file
/// \brief The element-wise and dense building blocks of the CPU oracle: embedding gather,
/// RMSNorm, matmul/GEMV, softmax, SwiGLU and residual add (fp32, Eigen).
///
/// Each function here is *the* reference for the CUDA kernel of the same name
/// (`<op>_kernel_vNN` is checked against `oracle::<op>`), so every one of them is usable on its
/// own, takes plain row-major buffers with their shapes spelled out, and computes in fp32 the
/// way a kernel with fp32 accumulation would. RoPE lives in `rope.h`, attention in
/// `attention.h`, the whole model in `forward.h`.
///
/// Buffers: `float*` of a documented shape, row-major, contiguous, sizes given by the `int`
/// arguments (no bounds are checked beyond what the comment says — a wrong size is a caller
/// bug). Token ids are data, so they *are* validated.
///
/// Aliasing: element-wise ops (`rmsnorm`, `softmax`, `swiglu`, `residual_add`) allow `out` to
/// be the same buffer as their input; `matmul`/`gemv`/`embedding` do not.

namespace nanoserve::oracle {

/// \brief Embedding gather: `out[t] = table[tokens[t]]`.
/// \param table      (vocab_size, dim) token embedding
/// \param vocab_size rows of `table`
/// \param dim        model width
/// \param tokens     (n) token ids; each must be in [0, vocab_size) or `InvalidArgument`
///                   is thrown
/// \param n          number of tokens
/// \param out        (n, dim)
void embedding(const float* table, int vocab_size, int dim, const int* tokens, int n,
               float* out);

/// \brief RMSNorm of each row: `out = x / sqrt(mean(x²) + eps) * gain` (Zhang & Sennrich 2019).
///
/// The mean of squares is accumulated in fp32 as llama2.c does; `eps` is added inside the root.
/// \param x    (rows, dim)
/// \param gain (dim)
/// \param rows number of rows
/// \param dim  values per row
/// \param eps  added to the mean of squares
/// \param out  (rows, dim); may alias `x`
void rmsnorm(const float* x, const float* gain, int rows, int dim, float eps, float* out);

/// \brief Many rows through one linear layer: `Y = X Wᵀ`, i.e. `Y[r] = W X[r]`.
///
/// `W` is stored as the model stores it, row-major `(out_dim, in_dim)` with `y = W x`, so the
/// same weight serves GEMV (decode, one row) and GEMM (prefill, many rows).
/// \param x       (rows, in_dim)
/// \param w       (out_dim, in_dim)
/// \param rows    number of input rows (tokens)
/// \param in_dim  input width
/// \param out_dim output width
/// \param y       (rows, out_dim); must not alias `x` or `w`
void matmul(const float* x, const float* w, int rows, int in_dim, int out_dim, float* y);

/// \brief One vector through one linear layer: `y = W x` (`matmul` with one row).
/// \param w       (out_dim, in_dim)
/// \param x       (in_dim)
/// \param out_dim output width
/// \param in_dim  input width
/// \param y       (out_dim); must not alias `x` or `w`
void gemv(const float* w, const float* x, int out_dim, int in_dim, float* y);

/// \brief Numerically stable softmax of each row: `exp(x - max) / sum(exp(x - max))`.
///
/// `-inf` entries get probability 0 (masking); a row must hold at least one finite value.
/// \param x    (rows, n)
/// \param rows number of rows
/// \param n    values per row
/// \param out  (rows, n); may alias `x`
void softmax(const float* x, int rows, int n, float* out);

/// \brief The SwiGLU gate (Shazeer 2020): `out = silu(gate) * up`, `silu(g) = g / (1 + e^-g)`.
///
/// In the FFN, `gate = W1 x` and `up = W3 x`; the result goes through `W2`.
/// \param gate (n)
/// \param up   (n)
/// \param n    number of values
/// \param out  (n); may alias `gate` or `up`
void swiglu(const float* gate, const float* up, int n, float* out);

/// \brief Residual connection: `x += delta`.
/// \param x     (n) the residual stream, updated in place
/// \param delta (n) a block's output
/// \param n     number of values
void residual_add(float* x, const float* delta, int n);

}  // namespace nanoserve::oracle
