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

/// \brief A device array that frees itself.
template <typename T>
class DeviceBuffer {
 public:
  /// \brief `n` uninitialized elements.
  explicit DeviceBuffer(std::size_t n) : size_(n) {
    CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&data_), n * sizeof(T)));
  }
  /// \brief A copy of `host`.
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) { upload(host); }
  ~DeviceBuffer() { cudaFree(data_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  /// \brief Device pointer.
  T* get() const { return data_; }
  /// \brief Number of elements.
  std::size_t size() const { return size_; }
  /// \brief Copies `host` (same size) to the device.
  void upload(const std::vector<T>& host) {
    CUDA_CHECK(cudaMemcpy(data_, host.data(), size_ * sizeof(T), cudaMemcpyHostToDevice));
  }
  /// \brief Copies the device contents back.
  std::vector<T> to_host() const {
    std::vector<T> host(size_);
    CUDA_CHECK(cudaMemcpy(host.data(), data_, size_ * sizeof(T), cudaMemcpyDeviceToHost));
    return host;
  }

 private:
  T* data_ = nullptr;
  std::size_t size_;
};

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
