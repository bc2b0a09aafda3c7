#include "common/engine/serve/model_executor.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

#include "common/engine/model/device_info.h"
#include "common/engine/serve/scheduler.h"
#include "common/engine/serve/static_batcher.h"
#include "common/error.h"
#include "common/sampling/sampler.h"

namespace nanoserve::engine {

namespace {

// Block size of the scratch sequence that computes wasted rows (any size works: it only
// has to hold max_tokens_per_step positions).
constexpr int kScratchBlockSize = 16;
constexpr std::int64_t kScratchSeq = 0;

RunnerOptions runner_options(const DeviceModel& model, const ModelExecutorOptions& o) {
  const int context = model.config().max_seq_len;
  if (o.max_seq_len < 0 || o.max_seq_len > context) {
    throw InvalidArgument("ModelExecutor: max_seq_len = " + std::to_string(o.max_seq_len) +
                          " is outside [0, " + std::to_string(context) +
                          "] (0 = the context of model '" + model.config().name + "')");
  }
  return {o.max_tokens_per_step, o.max_logit_rows};  // the runner checks they are >= 1
}

}  // namespace

ModelExecutorOptions executor_options_for(const SchedulerConfig& config) {
  ModelExecutorOptions o;
  o.max_tokens_per_step = config.max_num_batched_tokens;
  o.max_logit_rows = config.max_num_seqs;
  o.max_seq_len = config.max_model_len;
  return o;
}

ModelExecutorOptions executor_options_for(const StaticBatchConfig& config,
                                          int max_tokens_per_step) {
  ModelExecutorOptions o;
  o.max_tokens_per_step = max_tokens_per_step;
  o.max_logit_rows = config.batch_size;
  o.max_seq_len = config.max_model_len;
  o.compute_wasted_rows = true;
  return o;
}

ModelExecutor::ModelExecutor(const DeviceModel& model, ModelExecutorOptions options)
    : model_(model), options_(options), runner_(model, runner_options(model, options)) {
  if (options_.max_seq_len == 0) options_.max_seq_len = model.config().max_seq_len;
}

void ModelExecutor::attach_kv(const KVCacheManager* kv) {
  cache_.reset();
  kv_ = kv;
  if (kv_ != nullptr) {
    cache_ = std::make_unique<PagedKVCache>(model_.config(), model_.dtype(), *kv_,
                                            options_.max_seq_len);
  }
}

std::vector<int> ModelExecutor::execute(const SchedulerOutput& output) {
  if (cache_ == nullptr) {
    throw std::logic_error("ModelExecutor::execute: no KV cache manager is attached (the "
                           "serving loops attach theirs with attach_kv)");
  }
  // A pass that threw last time may have left rows behind.
  batch_ = ForwardBatch{};
  batch_samplers_.clear();
  batch_sample_index_.clear();
  // Copy-on-write copies first: the pass below writes into their destinations.
  cache_->copy_blocks(output.block_copies, 0);

  std::vector<int> sampled(static_cast<std::size_t>(output.num_sampled()), -1);
  const int max_rows = options_.max_tokens_per_step;
  int sample_index = 0;
  for (const ScheduledSequence& s : output.seqs) {
    if (s.seq_id > std::numeric_limits<int>::max() || s.seq_id < 0) {
      throw InvalidArgument("ModelExecutor: request id " + std::to_string(s.seq_id) +
                            " does not fit the KV cache's int sequence handles");
    }
    // The sequence's rows, in pieces that fit the pass being built.
    for (int done = 0; done < s.num_tokens;) {
      const int room = max_rows - batch_.rows();
      const int n = std::min(room, s.num_tokens - done);
      const bool last = done + n == s.num_tokens;
      const bool logits_full =
          static_cast<int>(batch_.logit_rows.size()) == options_.max_logit_rows;
      if (n == 0 || (last && s.sample && logits_full)) {
        run_pass(sampled);
        continue;
      }
      const auto first = output.input_ids.begin() + s.row_begin + done;
      batch_.tokens.insert(batch_.tokens.end(), first, first + n);
      batch_.chunks.push_back({static_cast<int>(s.seq_id), s.start_pos + done, n});
      if (last && s.sample) {
        batch_.logit_rows.push_back(batch_.rows() - 1);
        batch_samplers_.push_back(&s);
        batch_sample_index_.push_back(sample_index);
      }
      done += n;
    }
    sample_index += s.sample;
  }
  if (batch_.rows() > 0) run_pass(sampled);
  if (options_.compute_wasted_rows) compute_wasted(output.num_wasted_rows);
  // A last pass without logits has not synchronized: finish before the caller reads a clock.
  CUDA_CHECK(cudaStreamSynchronize(0));
  return sampled;
}

void ModelExecutor::run_pass(std::vector<int>& sampled) {
  const int vocab = model_.config().vocab_size;
  const std::vector<float> logits = runner_.forward(batch_, *cache_);
  for (std::size_t i = 0; i < batch_samplers_.size(); ++i) {
    const ScheduledSequence& s = *batch_samplers_[i];
    // The token goes to position end_pos(): the same (seed, position) key as a solo run.
    sampled[static_cast<std::size_t>(batch_sample_index_[i])] =
        sample(logits.data() + i * static_cast<std::size_t>(vocab), vocab,
               s.request->seq.sampling, static_cast<std::uint64_t>(s.end_pos()));
  }
  ++num_passes_;
  num_rows_ += batch_.rows();
  batch_ = ForwardBatch{};
  batch_samplers_.clear();
  batch_sample_index_.clear();
}

// Padding and idle slots cost a padded batch real rows; here they are rows of a throwaway
// sequence (token 0 at positions 0..n-1) in a pool of their own, computed and discarded. Their
// linear layers cost what padded rows cost; their attention spans n positions rather than the
// batch's, a small difference at these sizes.
void ModelExecutor::compute_wasted(int rows) {
  if (rows <= 0) return;
  const int piece_max = std::min(options_.max_tokens_per_step, options_.max_seq_len);
  if (scratch_kv_ == nullptr) {
    const int blocks = (piece_max + kScratchBlockSize - 1) / kScratchBlockSize;
    scratch_kv_ = std::make_unique<KVCacheManager>(blocks, kScratchBlockSize, false);
    scratch_cache_ = std::make_unique<PagedKVCache>(model_.config(), model_.dtype(),
                                                    *scratch_kv_, piece_max);
  }
  for (int left = rows; left > 0;) {
    const int n = std::min(left, piece_max);
    Sequence ghost;
    ghost.seq_id = kScratchSeq;
    ghost.token_ids.assign(static_cast<std::size_t>(n), 0);
    scratch_kv_->allocate(ghost);
    ForwardBatch batch = ForwardBatch::single(static_cast<int>(kScratchSeq), ghost.token_ids, 0,
                                              LogitRows::kLast);
    batch.logit_rows.clear();
    runner_.forward(batch, *scratch_cache_);
    scratch_kv_->free(kScratchSeq);
    ++num_passes_;
    num_wasted_rows_ += n;
    left -= n;
  }
}

std::string ModelExecutor::device_name() const {
  return engine::device_name() + " · kernels, " + dtype_name(model_.dtype()) +
         " weights, paged KV";
}

}  // namespace nanoserve::engine
