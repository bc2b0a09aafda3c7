#pragma once
/// \file
/// \brief Helpers for kernel tests that run on the simulator and, compiled by nvcc, on a GPU:
/// a fixture that skips without a device, RAII device buffers, launch-error expectations.

#include <gtest/gtest.h>

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "kernels/cuda_compat.h"
#include "kernels/device_buffer.h"

namespace nanoserve::testing {

/// \brief True when a CUDA device can be used (always true in the simulator).
inline bool have_device() {
  int count = 0;
  const bool ok = cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
  cudaGetLastError();  // a failed query must not leak into the next test's error checks
  return ok;
}

/// \brief Fixture for tests that need a device: skips (with the reason) when there is none.
class DeviceTest : public ::testing::Test {
 protected:
  /// \brief Skips the test without a device.
  void SetUp() override {
    if (!have_device()) GTEST_SKIP() << "no CUDA device on this machine";
  }
};

/// \brief Tests use the engine's owning device array.
using ::nanoserve::DeviceBuffer;

/// \brief Expects `run` to throw CudaError with `code` and a message containing `fragment`.
inline void expect_cuda_error(const std::function<void()>& run, cudaError_t code,
                              const std::string& fragment) {
  try {
    run();
    ADD_FAILURE() << "expected " << cudaGetErrorName(code) << " mentioning '" << fragment
                  << "', but nothing failed";
  } catch (const CudaError& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << "message: " << e.what();
  }
}

}  // namespace nanoserve::testing
