#include "common/engine/model/step_staging.h"

#include <algorithm>
#include <cstring>

namespace nanoserve::engine {

namespace {
constexpr std::size_t kAlign = 16;  // every section starts on 16 bytes (vector loads, uint64)

std::size_t round_up(std::size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }
}  // namespace

StepStaging::StepStaging(std::size_t initial_bytes)
    : host_(round_up(std::max<std::size_t>(initial_bytes, kAlign))),
      device_(host_.size()) {
  CUDA_CHECK(cudaEventCreateWithFlags(&uploaded_, cudaEventDisableTiming));
}

StepStaging::~StepStaging() {
  if (uploaded_ != nullptr) cudaEventDestroy(uploaded_);
}

void StepStaging::begin() {
  if (pending_) CUDA_CHECK(cudaEventSynchronize(uploaded_));  // the host buffer is free again
  pending_ = false;
  used_ = 0;
}

std::size_t StepStaging::add_bytes(std::size_t bytes) {
  const std::size_t offset = used_;
  const std::size_t end = offset + round_up(bytes);
  if (end > host_.size()) {
    // Both buffers move. The sections staged so far travel with the host buffer; the device
    // buffer holds nothing of this step yet (the upload comes last).
    const std::size_t capacity = std::max(2 * host_.size(), end);
    PinnedBuffer<std::byte> host(capacity);
    if (used_ > 0) std::memcpy(host.get(), host_.get(), used_);
    host_ = std::move(host);
    device_ = DeviceBuffer<std::byte>(capacity);
    ++generation_;
  }
  used_ = end;
  return offset;
}

void StepStaging::upload(cudaStream_t stream) {
  if (used_ == 0) return;
  CUDA_CHECK(cudaMemcpyAsync(device_.get(), host_.get(), used_, cudaMemcpyHostToDevice, stream));
  CUDA_CHECK(cudaEventRecord(uploaded_, stream));
  pending_ = true;
  ++uploads_;
}

}  // namespace nanoserve::engine
