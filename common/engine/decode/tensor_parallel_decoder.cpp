#include "common/engine/decode/tensor_parallel_decoder.h"

#include <stdexcept>

#include "common/engine/model/tensor_parallel.h"

namespace nanoserve::engine {

TensorParallelDecoder::TensorParallelDecoder(dist::Communicator& comm, const Model& model,
                                             int max_seq_len, DType activation_dtype,
                                             DType kv_dtype)
    : group_(comm, model.config) {
  device_ = std::make_unique<DeviceModel>(shard_model(model, group_.shard()), activation_dtype);
  RunnerOptions options =
      NaiveDecoder::runner_options(device_->config(), max_seq_len, activation_dtype);
  options.tensor_parallel = &group_;
  runner_ = std::make_unique<ModelRunner>(*device_, options);
  cache_ = std::make_unique<NaiveKVCache>(device_->config(), kv_dtype, max_seq_len, 1);
  if (leads()) {
    decoder_ = std::make_unique<NaiveDecoder>(*runner_, *cache_, CacheMode::kNaiveCache);
  } else {
    cache_->allocate();  // region 0, as rank 0's decoder takes it
  }
}

TensorParallelDecoder::~TensorParallelDecoder() = default;

NaiveDecoder& TensorParallelDecoder::decoder() {
  if (!decoder_) {
    throw std::logic_error("TensorParallelDecoder::decoder on rank " +
                           std::to_string(group_.rank()) + ": only rank 0 decodes");
  }
  return *decoder_;
}

long long TensorParallelDecoder::follow() { return follow_plans(*runner_, *cache_); }

std::string TensorParallelDecoder::description() const {
  const TensorParallelShard& s = group_.shard();
  return "tensor-parallel " + std::to_string(group_.size()) + " over " +
         group_.comm().description() + " (rank " + std::to_string(s.rank) + ": " +
         std::to_string(s.q_heads) + " of " + std::to_string(s.q_heads * group_.size()) +
         " q heads)";
}

}  // namespace nanoserve::engine
