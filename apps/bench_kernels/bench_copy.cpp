// The bandwidth yardstick: a device-to-device copy by the project's copy kernel and by
// cudaMemcpy. Both move 2 bytes per byte copied (read + write), as NVIDIA's bandwidthTest
// counts them; the faster of the two is 100% in the `%copy` column.
#include <memory>

#include "apps/bench_kernels/bench_case.h"
#include "kernels/copy.h"
#include "kernels/device_buffer.h"

namespace nanoserve::bench {
namespace {

std::vector<BenchCase> copy_cases(const SuiteOptions& options) {
  // Far beyond any L2 (an H200 has 50 MB), so the copy runs at DRAM speed.
  const std::size_t bytes = options.quick ? (std::size_t{1} << 20) : (std::size_t{1} << 30);
  const std::string shape = options.quick ? "1 MiB" : "1 GiB";
  struct Buffers {
    DeviceBuffer<float> src;  // (bytes / 4)
    DeviceBuffer<float> dst;  // (bytes / 4)
  };
  const auto make_buffers = [bytes] {
    auto b = std::make_shared<Buffers>();
    b->src = DeviceBuffer<float>(pattern<float>(bytes / sizeof(float), 1));
    b->dst = DeviceBuffer<float>(bytes / sizeof(float));
    return b;
  };
  BenchCase kernel{"copy", "v01", "bytes", shape, 2.0 * bytes, 0.0, true, {}};
  kernel.prepare = [bytes, make_buffers]() -> Launch {
    auto b = make_buffers();
    return [b, bytes](cudaStream_t s) { launch_copy(b->dst.get(), b->src.get(), bytes, s); };
  };
  BenchCase memcpy_case{"copy", "cudaMemcpy", "bytes", shape, 2.0 * bytes, 0.0, true, {}};
  memcpy_case.prepare = [bytes, make_buffers]() -> Launch {
    auto b = make_buffers();
    return [b, bytes](cudaStream_t s) {
      CUDA_CHECK(cudaMemcpyAsync(b->dst.get(), b->src.get(), bytes, cudaMemcpyDeviceToDevice, s));
    };
  };
  return {kernel, memcpy_case};
}

const bool kRegistered = register_suite("copy", 0, copy_cases);

}  // namespace
}  // namespace nanoserve::bench
