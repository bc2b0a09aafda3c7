// SwiGLU gate over 1, 32 and 512 rows of the MLP widths of Llama-2-7B (11008) and Llama-3-8B
// (14336): a pure streaming kernel, two fp32 inputs and one output per value.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "apps/bench_kernels/bench_case.h"
#include "kernels/device_buffer.h"
#include "kernels/swiglu.h"

namespace nanoserve::bench {
namespace {

BenchCase swiglu_case(int rows, int hidden) {
  const std::int64_t n = static_cast<std::int64_t>(rows) * hidden;
  BenchCase c;
  c.kernel = "swiglu";
  c.version = "v01";
  c.dtype = "fp32";
  c.shape = dims({rows, hidden});
  c.bytes = 3.0 * static_cast<double>(n) * sizeof(float);  // gate and up read, out written
  c.prepare = [n]() -> Launch {
    struct Buffers {
      DeviceBuffer<float> gate;  // (rows, hidden)
      DeviceBuffer<float> up;    // (rows, hidden)
      DeviceBuffer<float> out;   // (rows, hidden)
    };
    auto b = std::make_shared<Buffers>();
    b->gate = DeviceBuffer<float>(pattern<float>(static_cast<std::size_t>(n), 1));
    b->up = DeviceBuffer<float>(pattern<float>(static_cast<std::size_t>(n), 2));
    b->out = DeviceBuffer<float>(static_cast<std::size_t>(n));
    return [b, n](cudaStream_t s) {
      launch_swiglu(b->gate.get(), b->up.get(), n, b->out.get(), s);
    };
  };
  return c;
}

std::vector<BenchCase> swiglu_cases(const SuiteOptions& options) {
  if (options.quick) return {swiglu_case(3, 257)};
  std::vector<BenchCase> cases;
  for (int hidden : {11008, 14336}) {
    for (int rows : {1, 32, 512}) cases.push_back(swiglu_case(rows, hidden));
  }
  return cases;
}

const bool kRegistered = register_suite("swiglu", 110, swiglu_cases);

}  // namespace
}  // namespace nanoserve::bench
