#include "common/engine/model/device_sampler.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "common/error.h"

namespace nanoserve::engine {

DeviceSampler::DeviceSampler(int max_rows, int vocab, cudaStream_t stream)
    : max_rows_(max_rows),
      vocab_(vocab),
      stream_(stream),
      own_staging_(sizeof(SampleRowParams) * std::size_t(std::max(max_rows, 1))) {
  if (max_rows < 1 || vocab < 1) {
    throw InvalidArgument("DeviceSampler: max_rows " + std::to_string(max_rows) + " and vocab " +
                          std::to_string(vocab) + " must be >= 1");
  }
  host_tokens_ = PinnedBuffer<int>(std::size_t(max_rows));
  host_logprobs_ = PinnedBuffer<float>(std::size_t(max_rows));
  tokens_ = DeviceBuffer<int>(std::size_t(max_rows));
  logprobs_ = DeviceBuffer<float>(std::size_t(max_rows));
}

std::vector<int> DeviceSampler::sample(const float* device_logits,
                                       const std::vector<SamplingParams>& params,
                                       const std::vector<std::uint64_t>& positions,
                                       std::vector<float>* logprobs) {
  own_staging_.begin();
  stage(own_staging_, params, positions);
  own_staging_.upload(stream_);
  return sample_staged(device_logits, logprobs);
}

void DeviceSampler::stage(StepStaging& staging, const std::vector<SamplingParams>& params,
                          const std::vector<std::uint64_t>& positions) {
  staged_in_ = nullptr;
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
  for (const SamplingParams& p : params) p.validate();  // the host's error, before any staging
  params_at_ = staging.add<SampleRowParams>(std::size_t(rows));
  SampleRowParams* row = staging.host<SampleRowParams>(params_at_);
  for (int r = 0; r < rows; ++r) {
    const SamplingParams& p = params[std::size_t(r)];
    row[r] = SampleRowParams{p.temperature, p.top_k, p.top_p, p.min_p, p.seed,
                             positions[std::size_t(r)]};
  }
  params_ = params;
  positions_ = positions;
  staged_in_ = &staging;
}

std::vector<int> DeviceSampler::sample_staged(const float* device_logits,
                                              std::vector<float>* logprobs) {
  if (staged_in_ == nullptr) {
    throw InvalidArgument("DeviceSampler::sample_staged: no rows were staged");
  }
  const StepStaging& staging = *staged_in_;
  staged_in_ = nullptr;  // one sample_staged per stage
  const int rows = int(params_.size());
  if (logprobs != nullptr) logprobs->assign(std::size_t(rows), 0.0f);
  if (rows == 0) return {};
  const std::size_t n = std::size_t(rows);
  float* d_logprobs = logprobs != nullptr ? logprobs_.get() : nullptr;
  launch_sample(device_logits, staging.device<SampleRowParams>(params_at_), rows, vocab_,
                tokens_.get(), d_logprobs, stream_);
  CUDA_CHECK(cudaMemcpyAsync(host_tokens_.get(), tokens_.get(), n * sizeof(int),
                             cudaMemcpyDeviceToHost, stream_));
  if (d_logprobs != nullptr) {
    CUDA_CHECK(cudaMemcpyAsync(host_logprobs_.get(), d_logprobs, n * sizeof(float),
                               cudaMemcpyDeviceToHost, stream_));
  }
  CUDA_CHECK(cudaStreamSynchronize(stream_));  // the step's one wait: the sampled token ids

  std::vector<int> tokens(host_tokens_.get(), host_tokens_.get() + rows);
  for (int r = 0; r < rows; ++r) {
    if (tokens[std::size_t(r)] < 0) {
      raise_host_error(device_logits, params_[std::size_t(r)], positions_[std::size_t(r)], r);
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
