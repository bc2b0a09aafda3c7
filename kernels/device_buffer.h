#pragma once
/// \file
/// \brief `DeviceBuffer<T>`: an owning, move-only device array (cudaMalloc/cudaFree) with
/// typed upload/download — the only way host code in the engine and tests holds device memory;
/// and `PinnedBuffer<T>`, its host twin in page-locked memory (cudaMallocHost/cudaFreeHost), the
/// source or destination of a truly asynchronous cudaMemcpyAsync.

#include <cstddef>
#include <utility>
#include <vector>

#include "kernels/cuda_compat.h"

namespace nanoserve {

/// \brief A device array of `size()` elements of T that frees itself.
template <typename T>
class DeviceBuffer {
 public:
  /// \brief An empty buffer (no allocation).
  DeviceBuffer() = default;
  /// \brief `n` uninitialized elements (the simulator poisons them with NaN bytes).
  explicit DeviceBuffer(std::size_t n) : size_(n) {
    if (n > 0) CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&data_), n * sizeof(T)));
  }
  /// \brief A device copy of `host`.
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) { upload(host); }
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  /// \brief Takes ownership of `other`'s allocation.
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  /// \brief Frees this buffer, then takes ownership of `other`'s allocation.
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      reset();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }

  /// \brief Device pointer (nullptr when empty).
  T* get() const { return data_; }
  /// \brief Number of elements.
  std::size_t size() const { return size_; }
  /// \brief Size in bytes.
  std::size_t bytes() const { return size_ * sizeof(T); }
  /// \brief Copies `host` (exactly `size()` elements) to the device.
  void upload(const std::vector<T>& host) {
    if (host.size() != size_) throw CudaError(cudaErrorInvalidValue, "DeviceBuffer::upload: size mismatch");
    if (size_ > 0) CUDA_CHECK(cudaMemcpy(data_, host.data(), bytes(), cudaMemcpyHostToDevice));
  }
  /// \brief Copies the device contents back to the host.
  std::vector<T> to_host() const {
    std::vector<T> host(size_);
    if (size_ > 0) CUDA_CHECK(cudaMemcpy(host.data(), data_, bytes(), cudaMemcpyDeviceToHost));
    return host;
  }
  /// \brief Frees the allocation (the buffer becomes empty).
  void reset() {
    if (data_ != nullptr) cudaFree(data_);
    data_ = nullptr;
    size_ = 0;
  }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

/// \brief A page-locked (pinned) host array of `size()` elements of T that frees itself.
///
/// A copy from pageable memory is staged by the driver through a pinned bounce buffer and
/// does not overlap the host; from pinned memory, cudaMemcpyAsync is a DMA the host does not
/// wait for. The price: the host must not rewrite the buffer until the copy has run.
template <typename T>
class PinnedBuffer {
 public:
  /// \brief An empty buffer (no allocation).
  PinnedBuffer() = default;
  /// \brief `n` uninitialized elements.
  explicit PinnedBuffer(std::size_t n) : size_(n) {
    if (n > 0) CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&data_), n * sizeof(T)));
  }
  ~PinnedBuffer() { reset(); }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  /// \brief Takes ownership of `other`'s allocation.
  PinnedBuffer(PinnedBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  /// \brief Frees this buffer, then takes ownership of `other`'s allocation.
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept {
    if (this != &other) {
      reset();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  /// \brief Host pointer (nullptr when empty).
  T* get() const { return data_; }
  /// \brief Element `i` (unchecked).
  T& operator[](std::size_t i) const { return data_[i]; }
  /// \brief Number of elements.
  std::size_t size() const { return size_; }
  /// \brief Size in bytes.
  std::size_t bytes() const { return size_ * sizeof(T); }
  /// \brief Frees the allocation (the buffer becomes empty).
  void reset() {
    if (data_ != nullptr) cudaFreeHost(data_);
    data_ = nullptr;
    size_ = 0;
  }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace nanoserve
