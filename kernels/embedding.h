#pragma once
/// \file
/// \brief Embedding gather: the first step of the forward pass, one table row per token,
/// converted from the storage type of the table to that of the activations.

#include "kernels/cuda_compat.h"
#include "kernels/dtype.cuh"

namespace nanoserve {

/// \brief `out[t] = A(table[tokens[t]])` for t in [0, n), on `stream` (through fp32: exact when
/// A is at least as wide as T, one rounding otherwise).
///
/// Token ids live on the device, so the kernel cannot throw: an id outside `[0, vocab_size)`
/// never reads the table, its output row is set to zeros, and `*invalid_token` (when given) is
/// set to 1. The engine validates ids on the host before upload (the tokenizer and sampler
/// produce them there); the flag is the kernel's own guarantee that a bad id is noticed, never
/// an out-of-bounds read.
/// \tparam T storage type of the table: float, __half or __nv_bfloat16
/// \tparam A storage type of the activations: float, __half or __nv_bfloat16
/// \param table         (vocab_size, dim) token embedding
/// \param vocab_size    rows of `table` (>= 1)
/// \param dim           model width (>= 1)
/// \param tokens        (n) token ids, device memory
/// \param n             number of tokens (0 launches nothing)
/// \param out           (n, dim) activations
/// \param invalid_token (1) device int set to 1 when any id is out of range; left untouched
///                      otherwise (the caller zeroes it first); may be nullptr
/// \param stream        CUDA stream
/// \throws std::invalid_argument for negative sizes, vocab_size or dim < 1
template <typename T, typename A = float>
void launch_embedding(const T* table, int vocab_size, int dim, const int* tokens, int n,
                      nondeduced_t<A>* out,
                      int* invalid_token, cudaStream_t stream);

}  // namespace nanoserve
