// KV append: 1, 32 and 512 rows (a batch-1 decode step, a decode batch, a prefill chunk) of
// Llama-3-8B's kv_dim (8 KV heads x 128 = 1024) written from fp32 into an fp16 cache.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "apps/bench_kernels/bench_case.h"
#include "kernels/device_buffer.h"
#include "kernels/dtype.cuh"
#include "kernels/kv_append.h"

namespace nanoserve::bench {
namespace {

template <typename T>
BenchCase kv_append_case(int rows, int kv_dim) {
  BenchCase c;
  c.kernel = "kv_append";
  c.version = "v01";
  c.dtype = dtype_name(dtype_of<T>());
  c.shape = dims({rows, kv_dim});
  // k and v read in fp32, both cache rows written in T, the slots read.
  c.bytes = 2.0 * rows * kv_dim * (sizeof(float) + sizeof(T)) + rows * sizeof(int);
  c.prepare = [rows, kv_dim]() -> Launch {
    // A cache of 4 slots per row, each row writing its own slot spaced 4 apart, the way one
    // decode step writes one position of each of many sequences: distinct, in range, and
    // scattered rather than one contiguous block.
    const std::int64_t num_slots = 4LL * rows;
    struct Buffers {
      DeviceBuffer<float> k;    // (rows, kv_dim)
      DeviceBuffer<float> v;    // (rows, kv_dim)
      DeviceBuffer<int> slots;  // (rows)
      DeviceBuffer<T> k_cache;  // (num_slots, kv_dim)
      DeviceBuffer<T> v_cache;  // (num_slots, kv_dim)
    };
    auto b = std::make_shared<Buffers>();
    const std::size_t n = static_cast<std::size_t>(rows) * kv_dim;
    b->k = DeviceBuffer<float>(pattern<float>(n, 1));
    b->v = DeviceBuffer<float>(pattern<float>(n, 2));
    std::vector<int> slots(rows);
    for (int r = 0; r < rows; ++r) slots[r] = 4 * r + r % 4;
    b->slots = DeviceBuffer<int>(slots);
    b->k_cache = DeviceBuffer<T>(static_cast<std::size_t>(num_slots) * kv_dim);
    b->v_cache = DeviceBuffer<T>(static_cast<std::size_t>(num_slots) * kv_dim);
    return [b, rows, kv_dim, num_slots](cudaStream_t s) {
      launch_kv_append(b->k.get(), b->v.get(), b->slots.get(), rows, kv_dim, b->k_cache.get(),
                       b->v_cache.get(), num_slots, s);
    };
  };
  return c;
}

std::vector<BenchCase> kv_append_cases(const SuiteOptions& options) {
  if (options.quick) return {kv_append_case<__half>(3, 128)};
  std::vector<BenchCase> cases;
  for (int rows : {1, 32, 512}) cases.push_back(kv_append_case<__half>(rows, 1024));
  return cases;
}

const bool kRegistered = register_suite("kv_append", 70, kv_append_cases);

}  // namespace
}  // namespace nanoserve::bench
