// Residual add `x += residual` over 1, 32 and 512 rows of width 4096: in fp32, the engine's
// activation type, and in fp16 and bf16 at the prefill size (half the bytes, the same kernel).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "apps/bench_kernels/bench_case.h"
#include "kernels/device_buffer.h"
#include "kernels/dtype.cuh"
#include "kernels/residual_add.h"

namespace nanoserve::bench {
namespace {

template <typename T>
BenchCase residual_add_case(int rows, int dim) {
  const std::int64_t n = static_cast<std::int64_t>(rows) * dim;
  BenchCase c;
  c.kernel = "residual_add";
  c.version = "v01";
  c.dtype = dtype_name(dtype_of<T>());
  c.shape = dims({rows, dim});
  c.bytes = 3.0 * static_cast<double>(n) * sizeof(T);  // x and residual read, x written
  c.prepare = [n]() -> Launch {
    struct Buffers {
      DeviceBuffer<T> x;         // (rows, dim)
      DeviceBuffer<T> residual;  // (rows, dim)
    };
    auto b = std::make_shared<Buffers>();
    b->x = DeviceBuffer<T>(pattern<T>(static_cast<std::size_t>(n), 1));
    // x grows by the residual every repetition; |residual| < 0.5, so even fp16 stays finite
    // for thousands of repetitions (and the kernel's speed does not depend on the values).
    b->residual = DeviceBuffer<T>(pattern<T>(static_cast<std::size_t>(n), 2));
    return [b, n](cudaStream_t s) { launch_residual_add(b->x.get(), b->residual.get(), n, s); };
  };
  return c;
}

std::vector<BenchCase> residual_add_cases(const SuiteOptions& options) {
  if (options.quick) return {residual_add_case<float>(3, 257), residual_add_case<__half>(3, 257)};
  std::vector<BenchCase> cases;
  for (int rows : {1, 32, 512}) cases.push_back(residual_add_case<float>(rows, 4096));
  cases.push_back(residual_add_case<__half>(512, 4096));
  cases.push_back(residual_add_case<__nv_bfloat16>(512, 4096));
  return cases;
}

const bool kRegistered = register_suite("residual_add", 100, residual_add_cases);

}  // namespace
}  // namespace nanoserve::bench
