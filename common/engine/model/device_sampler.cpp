#include "common/engine/model/device_sampler.h"

#include <stdexcept>
#include <string>

#include "common/error.h"

namespace nanoserve::engine {

void DeviceSampler::PinnedFree::operator()(void* p) const {
  if (p != nullptr) cudaFreeHost(p);  // no throw from a deleter; a failed free leaks
}

template <typename T>
DeviceSampler::Pinned<T> DeviceSampler::pinned(int n) {
  void* p = nullptr;
  CUDA_CHECK(cudaMallocHost(&p, std::size_t(n) * sizeof(T)));
  return Pinned<T>(static_cast<T*>(p));
}

DeviceSampler::DeviceSampler(int max_rows, int vocab, cudaStream_t stream)
    : max_rows_(max_rows), vocab_(vocab), stream_(stream) {
  if (max_rows < 1 || vocab < 1) {
    throw InvalidArgument("DeviceSampler: max_rows " + std::to_string(max_rows) + " and vocab " +
                          std::to_string(vocab) + " must be >= 1");
  }
  staging_ = pinned<SampleRowParams>(max_rows);
  host_tokens_ = pinned<int>(max_rows);
  host_logprobs_ = pinned<float>(max_rows);
  params_ = DeviceBuffer<SampleRowParams>(std::size_t(max_rows));
  tokens_ = DeviceBuffer<int>(std::size_t(max_rows));
  logprobs_ = DeviceBuffer<float>(std::size_t(max_rows));
}

std::vector<int> DeviceSampler::sample(const float* device_logits,
                                       const std::vector<SamplingParams>& params,
                                       const std::vector<std::uint64_t>& positions,
                                       std::vector<float>* logprobs) {
  const int rows = int(params.size());
  if (params.size() != positions.size()) {
    throw InvalidArgument("DeviceSampler::sample: " + std::to_string(params.size()) +
                          " parameter sets for " + std::to_string(positions.size()) +
                          " positions");
  }
  if (rows > max_rows_) {
    throw InvalidArgument("DeviceSampler::sample: " + std::to_string(rows) +
                          " rows, more than max_rows " + std::to_string(max_rows_));
  }
  if (logprobs != nullptr) logprobs->assign(std::size_t(rows), 0.0f);
  if (rows == 0) return {};
  for (int r = 0; r < rows; ++r) {
    const SamplingParams& p = params[std::size_t(r)];
    p.validate();  // the host's error, before anything is launched
    staging_[r] = SampleRowParams{p.temperature, p.top_k, p.top_p, p.min_p, p.seed,
                                  positions[std::size_t(r)]};
  }
  const std::size_t n = std::size_t(rows);
  CUDA_CHECK(cudaMemcpyAsync(params_.get(), staging_.get(), n * sizeof(SampleRowParams),
                             cudaMemcpyHostToDevice, stream_));
  float* d_logprobs = logprobs != nullptr ? logprobs_.get() : nullptr;
  launch_sample(device_logits, params_.get(), rows, vocab_, tokens_.get(), d_logprobs, stream_);
  CUDA_CHECK(cudaMemcpyAsync(host_tokens_.get(), tokens_.get(), n * sizeof(int),
                             cudaMemcpyDeviceToHost, stream_));
  if (d_logprobs != nullptr) {
    CUDA_CHECK(cudaMemcpyAsync(host_logprobs_.get(), d_logprobs, n * sizeof(float),
                               cudaMemcpyDeviceToHost, stream_));
  }
  CUDA_CHECK(cudaStreamSynchronize(stream_));

  std::vector<int> tokens(host_tokens_.get(), host_tokens_.get() + rows);
  for (int r = 0; r < rows; ++r) {
    if (tokens[std::size_t(r)] < 0) {
      raise_host_error(device_logits, params[std::size_t(r)], positions[std::size_t(r)], r);
    }
  }
  if (logprobs != nullptr) logprobs->assign(host_logprobs_.get(), host_logprobs_.get() + rows);
  return tokens;
}

void DeviceSampler::raise_host_error(const float* device_logits, const SamplingParams& params,
                                     std::uint64_t position, int row) const {
  // The error path only: fetch the refused row and let the host sampler say what is wrong.
  std::vector<float> logits(static_cast<std::size_t>(vocab_));
  CUDA_CHECK(cudaMemcpy(logits.data(), device_logits + std::size_t(row) * std::size_t(vocab_),
                        logits.size() * sizeof(float), cudaMemcpyDeviceToHost));
  nanoserve::sample(logits.data(), vocab_, params, position);  // throws for what the kernel refuses
  throw std::logic_error("DeviceSampler: the kernel refused row " + std::to_string(row) +
                         ", which the host sampler accepts");
}

}  // namespace nanoserve::engine
