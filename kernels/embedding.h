#pragma once
/// \file
/// \brief Embedding gather: the first step of the forward pass, one table row per token,
/// widened from the storage type to the fp32 activations.

#include "kernels/cuda_compat.h"

namespace nanoserve {

/// \brief `out[t] = float(table[tokens[t]])` for t in [0, n), on `stream`.
///
/// Token ids live on the device, so the kernel cannot throw: an id outside `[0, vocab_size)`
/// never reads the table, its output row is set to zeros, and `*invalid_token` (when given) is
/// set to 1. The engine validates ids on the host before upload (the tokenizer and sampler
/// produce them there); the flag is the kernel's own guarantee that a bad id is noticed, never
/// an out-of-bounds read.
/// \tparam T storage type of the table: float, __half or __nv_bfloat16
/// \param table         (vocab_size, dim) token embedding
/// \param vocab_size    rows of `table` (>= 1)
/// \param dim           model width (>= 1)
/// \param tokens        (n) token ids, device memory
/// \param n             number of tokens (0 launches nothing)
/// \param out           (n, dim) fp32 activations
/// \param invalid_token (1) device int set to 1 when any id is out of range; left untouched
///                      otherwise (the caller zeroes it first); may be nullptr
/// \param stream        CUDA stream
/// \throws std::invalid_argument for negative sizes, vocab_size or dim < 1
template <typename T>
void launch_embedding(const T* table, int vocab_size, int dim, const int* tokens, int n,
                      float* out, int* invalid_token, cudaStream_t stream);

}  // namespace nanoserve
