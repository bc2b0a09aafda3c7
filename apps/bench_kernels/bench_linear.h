#pragma once
/// \file
/// \brief A benchmark case for any linear kernel `Y = X Wᵀ` (GEMV, GEMM, launch_linear): the
/// buffers, the minimal traffic and the FLOP count they share.

#include <cstddef>
#include <memory>
#include <string>
#include <utility>

#include "apps/bench_kernels/bench_case.h"
#include "kernels/device_buffer.h"
#include "kernels/dtype.cuh"

namespace nanoserve::bench {

/// \brief A case running `run(w, x, y, m, n, k, stream)` on W (n, k) of type T, X (m, k) and
/// Y (m, n) fp32. Bytes: W, X and Y once each — the least any implementation must move.
template <typename T, typename Run>
BenchCase linear_case(std::string kernel, std::string version, int m, int n, int k,
                      std::string shape, Run run) {
  BenchCase c;
  c.kernel = std::move(kernel);
  c.version = std::move(version);
  c.dtype = dtype_name(dtype_of<T>());
  c.shape = std::move(shape);
  c.bytes = static_cast<double>(n) * k * sizeof(T) +
            static_cast<double>(m) * (static_cast<double>(k) + n) * sizeof(float);
  c.flops = 2.0 * m * n * static_cast<double>(k);
  c.prepare = [=]() -> Launch {
    struct Buffers {
      DeviceBuffer<T> w;      // (n, k)
      DeviceBuffer<float> x;  // (m, k)
      DeviceBuffer<float> y;  // (m, n)
    };
    auto b = std::make_shared<Buffers>();
    b->w = DeviceBuffer<T>(pattern<T>(static_cast<std::size_t>(n) * k, 1));
    b->x = DeviceBuffer<float>(pattern<float>(static_cast<std::size_t>(m) * k, 2));
    b->y = DeviceBuffer<float>(static_cast<std::size_t>(m) * n);
    return [=](cudaStream_t s) { run(b->w.get(), b->x.get(), b->y.get(), m, n, k, s); };
  };
  return c;
}

}  // namespace nanoserve::bench
