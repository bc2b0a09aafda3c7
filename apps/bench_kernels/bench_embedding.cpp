// Embedding gather: a batch-1 decode step (1 token) and a 512-token prefill reading rows of a
// Llama-2-7B-sized fp16 table (32000 x 4096) into fp32 activations.
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "apps/bench_kernels/bench_case.h"
#include "kernels/device_buffer.h"
#include "kernels/dtype.cuh"
#include "kernels/embedding.h"

namespace nanoserve::bench {
namespace {

template <typename T>
BenchCase embedding_case(int vocab, int dim, int n) {
  BenchCase c;
  c.kernel = "embedding";
  c.version = "v01";
  c.dtype = dtype_name(dtype_of<T>());
  c.shape = dims({n, dim}) + " V" + std::to_string(vocab);
  // The n table rows read, the ids read, the fp32 rows written; the rest of the table is never
  // touched.
  c.bytes = static_cast<double>(n) * dim * (sizeof(T) + sizeof(float)) + n * sizeof(int);
  c.prepare = [vocab, dim, n]() -> Launch {
    struct Buffers {
      DeviceBuffer<T> table;     // (vocab, dim)
      DeviceBuffer<int> tokens;  // (n)
      DeviceBuffer<float> out;   // (n, dim)
      DeviceBuffer<int> invalid;  // (1)
    };
    auto b = std::make_shared<Buffers>();
    b->table = DeviceBuffer<T>(pattern<T>(static_cast<std::size_t>(vocab) * dim, 1));
    // Valid ids spread over the table (7919 is prime, so distinct for n <= vocab): every row is
    // a real gather, none takes the kernel's out-of-range path.
    std::vector<int> tokens(n);
    for (int t = 0; t < n; ++t) tokens[t] = static_cast<int>((7919LL * t + 1) % vocab);
    b->tokens = DeviceBuffer<int>(tokens);
    b->out = DeviceBuffer<float>(static_cast<std::size_t>(n) * dim);
    b->invalid = DeviceBuffer<int>(std::vector<int>{0});
    return [b, vocab, dim, n](cudaStream_t s) {
      launch_embedding(b->table.get(), vocab, dim, b->tokens.get(), n, b->out.get(),
                       b->invalid.get(), s);
    };
  };
  return c;
}

std::vector<BenchCase> embedding_cases(const SuiteOptions& options) {
  if (options.quick) return {embedding_case<__half>(64, 64, 3)};
  return {embedding_case<__half>(32000, 4096, 1), embedding_case<__half>(32000, 4096, 512)};
}

const bool kRegistered = register_suite("embedding", 40, embedding_cases);

}  // namespace
}  // namespace nanoserve::bench
