// Embedding gather: out[t] = float(table[tokens[t]]).
//
// Versions:
//   v01  one block per token, threads stride over the row: reads and writes are coalesced,
//        and the whole kernel is a copy (bytes = n * dim * (sizeof(T) + 4)).
#include <cstdint>

#include "kernels/dtype.cuh"
#include "kernels/embedding.h"
#include "kernels/kernel_args.h"

namespace nanoserve {
namespace {

// ---------------------------------------------------------------------------------------------
// kernels

// table (vocab_size, dim), tokens (n), out (n, dim); grid (n), block (kBlock)
template <typename T, typename A>
__global__ void embedding_kernel_v01(const T* __restrict__ table, int vocab_size, int dim,
                                     const int* __restrict__ tokens, A* __restrict__ out,
                                     int* invalid_token) {
  const int t = blockIdx.x;
  const int token = tokens[t];
  A* row_out = out + static_cast<std::int64_t>(t) * dim;  // (dim)
  if (token < 0 || token >= vocab_size) {
    // Every thread of the block sees the same id; a plain store of 1 by all of them is benign.
    if (threadIdx.x == 0 && invalid_token != nullptr) *invalid_token = 1;
    for (int i = threadIdx.x; i < dim; i += blockDim.x) row_out[i] = from_float<A>(0.0f);
    return;
  }
  const T* row = table + static_cast<std::int64_t>(token) * dim;  // (dim)
  for (int i = threadIdx.x; i < dim; i += blockDim.x) row_out[i] = from_float<A>(to_float(row[i]));
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// launchers

template <typename T, typename A>
void launch_embedding(const T* table, int vocab_size, int dim, const int* tokens, int n,
                      nondeduced_t<A>* out,
                      int* invalid_token, cudaStream_t stream) {
  constexpr const char* kOp = "launch_embedding";
  kargs::require_at_least(kOp, "vocab_size", vocab_size, 1);
  kargs::require_at_least(kOp, "dim", dim, 1);
  kargs::require_at_least(kOp, "n", n, 0);
  if (n == 0) return;
  constexpr int kBlock = 256;
  launch(embedding_kernel_v01<T, A>, dim3(n), dim3(kBlock), 0, stream, table, vocab_size, dim,
         tokens, out, invalid_token);
}

#define NANOSERVE_INSTANTIATE_EMBEDDING(T, A)                                             \
  template void launch_embedding<T, A>(const T*, int, int, const int*, int, A*, int*, \
                                       cudaStream_t);
NANOSERVE_FOR_EACH_STORAGE_PAIR(NANOSERVE_INSTANTIATE_EMBEDDING)
#undef NANOSERVE_INSTANTIATE_EMBEDDING

}  // namespace nanoserve
