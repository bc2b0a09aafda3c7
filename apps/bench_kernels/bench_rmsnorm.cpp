// RMSNorm: both versions over 1 (batch-1 decode), 32 (a decode batch) and 512 (a prefill) rows
// at the widths of Llama-2-7B (4096) and Llama-2-70B (8192), gain in fp16. v01 gives each row
// a block, v02 a warp: the table shows where each wins.
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "apps/bench_kernels/bench_case.h"
#include "kernels/device_buffer.h"
#include "kernels/dtype.cuh"
#include "kernels/rmsnorm.h"

namespace nanoserve::bench {
namespace {

template <typename T>
BenchCase rmsnorm_case(int version, int rows, int dim) {
  BenchCase c;
  c.kernel = "rmsnorm";
  c.version = "v0" + std::to_string(version);
  c.dtype = dtype_name(dtype_of<T>());
  c.shape = dims({rows, dim});
  // x read and out written once, the gain once (every row reuses it from cache).
  c.bytes = 2.0 * rows * dim * sizeof(float) + static_cast<double>(dim) * sizeof(T);
  c.prepare = [version, rows, dim]() -> Launch {
    struct Buffers {
      DeviceBuffer<float> x;    // (rows, dim)
      DeviceBuffer<T> gain;     // (dim)
      DeviceBuffer<float> out;  // (rows, dim)
    };
    auto b = std::make_shared<Buffers>();
    b->x = DeviceBuffer<float>(pattern<float>(static_cast<std::size_t>(rows) * dim, 1));
    b->gain = DeviceBuffer<T>(pattern<T>(dim, 2));
    b->out = DeviceBuffer<float>(static_cast<std::size_t>(rows) * dim);
    return [b, version, rows, dim](cudaStream_t s) {
      launch_rmsnorm(b->x.get(), b->gain.get(), rows, dim, 1e-5f, b->out.get(), s, version);
    };
  };
  return c;
}

std::vector<BenchCase> rmsnorm_cases(const SuiteOptions& options) {
  std::vector<BenchCase> cases;
  for (int v = 1; v <= kRmsnormVersions; ++v) {
    if (options.quick) {
      cases.push_back(rmsnorm_case<__half>(v, 3, 300));  // 300: a partial last warp step
      continue;
    }
    for (int dim : {4096, 8192}) {
      for (int rows : {1, 32, 512}) cases.push_back(rmsnorm_case<__half>(v, rows, dim));
    }
  }
  return cases;
}

const bool kRegistered = register_suite("rmsnorm", 50, rmsnorm_cases);

}  // namespace
}  // namespace nanoserve::bench
