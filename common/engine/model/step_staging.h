#pragma once
/// \file
/// \brief `StepStaging`: everything a step sends to the device, gathered in one pinned host
/// buffer and sent by one `cudaMemcpyAsync`.
///
/// A decode step needs a few hundred bytes of metadata: token ids, positions, the KV cache's
/// slot mapping, block tables and lengths, the sampler's parameters. Sent as five pageable
/// `cudaMemcpyAsync` calls, each is a driver call and a bounce through a driver buffer, and the
/// host waits for every one; sent from pinned memory as one copy, the host enqueues it and moves
/// on. Each part of the step adds its section, fills it, and the runner uploads them all:
///
///     host (pinned)    [ slots | tables | lens | cu | tokens | positions | sampler params ]
///                        ▲ PagedKVCache        ▲ ModelRunner               ▲ DeviceSampler
///                        │ add<int>(n) → offset; host<int>(offset)[i] = …
///     upload(stream)     ═══════════════ one cudaMemcpyAsync ═══════════════▶
///     device           [ slots | tables | lens | cu | tokens | positions | sampler params ]
///                        kernels read device<int>(offset)
///
/// Sections are 16-byte aligned. The buffers grow (doubling) when a step needs more; both
/// then move, which `generation()` counts, so that a CUDA graph that baked in a device address
/// of the old buffer is captured again. For the same sequence of sections (a decode step of
/// one graph bucket) the offsets, hence the device addresses, are the same every step.
///
/// The pinned buffer may be rewritten only after the previous upload has read it: `begin()`
/// waits on an event recorded behind that upload. In a serving loop the previous step already
/// waited for its sampled tokens, so the wait returns at once.

#include <cstddef>
#include <cstdint>

#include "kernels/cuda_compat.h"
#include "kernels/device_buffer.h"

namespace nanoserve::engine {

/// \brief One pinned host buffer and its device twin: a step's metadata in one upload.
///
/// \par Example
/// \snippet tests/ch01/test_step_staging.cpp StepStaging
class StepStaging {
 public:
  /// \brief Buffers of `initial_bytes` (they grow when a step needs more).
  explicit StepStaging(std::size_t initial_bytes = 4096);
  ~StepStaging();
  StepStaging(const StepStaging&) = delete;
  StepStaging& operator=(const StepStaging&) = delete;

  /// \brief Starts a step: waits until the previous upload has read the host buffer, then
  /// forgets every section.
  void begin();
  /// \brief Reserves a section of `n` values of T (16-byte aligned) and returns its offset.
  /// Growing moves both buffers: pointers from `host`/`device` taken before are stale.
  template <typename T>
  std::size_t add(std::size_t n) {
    return add_bytes(n * sizeof(T));
  }
  /// \brief Host pointer of the section at `offset` (valid until the next `add`).
  template <typename T>
  T* host(std::size_t offset) const {
    return reinterpret_cast<T*>(host_.get() + offset);
  }
  /// \brief Device pointer of the section at `offset` (valid until the buffers grow).
  template <typename T>
  T* device(std::size_t offset) const {
    return reinterpret_cast<T*>(device_.get() + offset);
  }
  /// \brief One `cudaMemcpyAsync` of every section since `begin()` to the device, on `stream`
  /// (nothing when no section was added). The host does not wait for it.
  void upload(cudaStream_t stream);

  /// \brief Bytes staged since `begin()`.
  std::size_t staged_bytes() const { return used_; }
  /// \brief Capacity of each buffer in bytes.
  std::size_t capacity() const { return device_.size(); }
  /// \brief Uploads made so far.
  long long uploads() const { return uploads_; }
  /// \brief How many times the buffers moved (grew): a device address from an earlier
  /// generation is stale.
  int generation() const { return generation_; }

 private:
  std::size_t add_bytes(std::size_t bytes);

  PinnedBuffer<std::byte> host_;    // (capacity) pinned, the copy's source
  DeviceBuffer<std::byte> device_;  // (capacity)
  std::size_t used_ = 0;            // bytes staged since begin()
  cudaEvent_t uploaded_ = nullptr;  // recorded behind the last upload
  bool pending_ = false;            // an upload was recorded and not yet waited for
  long long uploads_ = 0;
  int generation_ = 0;
};

}  // namespace nanoserve::engine
