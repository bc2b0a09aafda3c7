#include "common/engine/model/tensor_parallel_group.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

#include "common/engine/model/forward_batch_wire.h"
#include "common/engine/model/model_runner.h"
#include "common/error.h"

namespace nanoserve::engine {

namespace {

dist::DataType data_type_of(DType t) {
  switch (t) {
    case DType::kF32: return dist::DataType::kF32;
    case DType::kF16: return dist::DataType::kF16;
    case DType::kBF16: return dist::DataType::kBF16;
  }
  return dist::DataType::kF32;
}

// Restores a communicator's watchdog time when it goes out of scope.
class TimeoutScope {
 public:
  TimeoutScope(dist::Communicator& comm, double seconds) : comm_(comm), saved_(comm.timeout_s()) {
    comm_.set_timeout_s(seconds);
  }
  ~TimeoutScope() { comm_.set_timeout_s(saved_); }
  TimeoutScope(const TimeoutScope&) = delete;
  TimeoutScope& operator=(const TimeoutScope&) = delete;

 private:
  dist::Communicator& comm_;
  double saved_;
};

}  // namespace

TensorParallelGroup::TensorParallelGroup(dist::Communicator& comm, const ModelConfig& config)
    : comm_(comm),
      shard_(TensorParallelShard::of(config, comm.rank(), comm.size())),
      vocab_size_(config.vocab_size),
      gather_width_(0) {
  for (int r = 0; r < comm.size(); ++r) {
    shards_.push_back(TensorParallelShard::of(config, r, comm.size()));
    gather_width_ = std::max(gather_width_, shards_.back().vocab + 1);
  }
}

void TensorParallelGroup::send_plan(const ForwardBatch& batch) {
  if (rank() != 0) {
    throw std::logic_error("TensorParallelGroup::send_plan on rank " + std::to_string(rank()) +
                           ": only rank 0 plans");
  }
  std::vector<std::uint8_t> bytes = encode_batch(batch);  // never empty: empty means stop
  comm_.broadcast_bytes(bytes, 0);
  ++counters_.plans;
  counters_.plan_bytes += static_cast<long long>(bytes.size());
}

std::optional<ForwardBatch> TensorParallelGroup::receive_plan(bool wait_forever) {
  if (rank() == 0) {
    throw std::logic_error("TensorParallelGroup::receive_plan on rank 0, which sends the plans");
  }
  std::vector<std::uint8_t> bytes;
  {
    const double limit = wait_forever ? std::numeric_limits<double>::infinity() : comm_.timeout_s();
    TimeoutScope scope(comm_, limit);
    comm_.broadcast_bytes(bytes, 0);
  }
  if (bytes.empty()) return std::nullopt;
  ++counters_.plans;
  counters_.plan_bytes += static_cast<long long>(bytes.size());
  return decode_batch(bytes);
}

void TensorParallelGroup::stop() {
  if (rank() != 0) {
    throw std::logic_error("TensorParallelGroup::stop on rank " + std::to_string(rank()) +
                           ": only rank 0 plans");
  }
  std::vector<std::uint8_t> none;
  comm_.broadcast_bytes(none, 0);
}

void TensorParallelGroup::all_reduce(void* x, std::int64_t count, DType type,
                                     cudaStream_t stream) {
  comm_.all_reduce(x, static_cast<std::size_t>(count), data_type_of(type), dist::ReduceOp::kSum,
                   stream);
  ++counters_.all_reduces;
  counters_.all_reduce_bytes += count * dtype_bytes(type);
}

void TensorParallelGroup::gather_logits(const float* mine, float* gathered, int rows,
                                        float* logits, cudaStream_t stream) {
  // Each rank's block is (rows, its vocab + 1) at the start of a rows × gather_width() chunk
  // (all-gather moves equal counts; the last rank's slice may be shorter).
  const std::size_t chunk = std::size_t(rows) * std::size_t(gather_width_);
  comm_.all_gather(mine, gathered, chunk, dist::DataType::kF32, stream);
  ++counters_.all_gathers;
  counters_.all_gather_bytes += static_cast<long long>(chunk * sizeof(float));
  // Rank r's columns [0, vocab_r) go to columns [vocab_begin_r, +vocab_r) of every row.
  for (int r = 0; r < size(); ++r) {
    const TensorParallelShard& s = shards_[std::size_t(r)];
    CUDA_CHECK(cudaMemcpy2DAsync(logits + s.vocab_begin, std::size_t(vocab_size_) * sizeof(float),
                                 gathered + std::size_t(r) * chunk,
                                 std::size_t(s.vocab + 1) * sizeof(float),
                                 std::size_t(s.vocab) * sizeof(float), std::size_t(rows),
                                 cudaMemcpyDeviceToDevice, stream));
  }
}

long long follow_plans(ModelRunner& runner, DeviceKVCache& cache, bool wait_forever) {
  TensorParallelGroup* group = runner.options().tensor_parallel;
  if (group == nullptr || group->rank() == 0) {
    throw InvalidArgument(group == nullptr
                              ? "follow_plans: the runner is not part of a tensor-parallel group"
                              : "follow_plans: rank 0 sends the plans; it does not follow them");
  }
  long long passes = 0;
  while (std::optional<ForwardBatch> batch = group->receive_plan(wait_forever)) {
    runner.forward_on_device(*batch, cache);
    ++passes;
  }
  CUDA_CHECK(cudaStreamSynchronize(runner.stream()));
  return passes;
}

}  // namespace nanoserve::engine
