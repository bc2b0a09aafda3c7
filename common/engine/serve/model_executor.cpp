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

// The padding sequence's id in a pass: no request has a negative id.
constexpr std::int64_t kPaddingSeq = -1;

RunnerOptions runner_options(const DeviceModel& model, const ModelExecutorOptions& o) {
  const int context = model.config().max_seq_len;
  if (o.max_seq_len < 0 || o.max_seq_len > context) {
    throw InvalidArgument("ModelExecutor: max_seq_len = " + std::to_string(o.max_seq_len) +
                          " is outside [0, " + std::to_string(context) +
                          "] (0 = the context of model '" + model.config().name + "')");
  }
  RunnerOptions r{o.max_tokens_per_step, o.max_logit_rows, o.activation_dtype};  // checks >= 1
  r.cuda_graphs = o.cuda_graphs;
  return r;
}

}  // namespace

std::vector<int> graph_buckets(const ModelExecutorOptions& o) {
  RunnerOptions r{o.max_tokens_per_step, o.max_logit_rows};
  r.cuda_graphs = o.cuda_graphs;
  return graph_buckets(r);
}

ModelExecutorOptions executor_options_for(const SchedulerConfig& config) {
  ModelExecutorOptions o;
  o.max_tokens_per_step = config.max_num_batched_tokens;
  o.max_logit_rows = config.max_num_seqs;
  o.max_seq_len = config.max_model_len;
  o.num_kv_blocks = config.num_kv_blocks;
  o.block_size = config.block_size;
  return o;
}

ModelExecutorOptions executor_options_for(const StaticBatchConfig& config,
                                          int max_tokens_per_step) {
  ModelExecutorOptions o;
  o.max_tokens_per_step = max_tokens_per_step;
  o.max_logit_rows = config.batch_size;
  o.max_seq_len = config.max_model_len;
  o.num_kv_blocks = config.num_kv_blocks;
  o.block_size = config.block_size;
  o.compute_wasted_rows = true;
  return o;
}

ModelExecutor::ModelExecutor(const DeviceModel& model, ModelExecutorOptions options)
    : model_(model), options_(options), runner_(model, runner_options(model, options)) {
  if (options_.max_seq_len == 0) options_.max_seq_len = model.config().max_seq_len;
  if (options_.num_kv_blocks < 1 || options_.block_size < 1) {
    throw InvalidArgument("ModelExecutor: need num_kv_blocks >= 1 and block_size >= 1, got " +
                          std::to_string(options_.num_kv_blocks) + " and " +
                          std::to_string(options_.block_size));
  }
  if (options_.device_sampling) {
    sampler_ = std::make_unique<DeviceSampler>(options_.max_logit_rows, model.config().vocab_size,
                                               runner_.stream());
  }
  // Padding rows of a pass: positions 0 .. max_tokens_per_step-1 of one padding sequence.
  int blocks = options_.num_kv_blocks;
  if (options_.compute_wasted_rows) {
    const int padding_len = std::min(options_.max_tokens_per_step, options_.max_seq_len);
    const int n = (padding_len + options_.block_size - 1) / options_.block_size;
    for (int b = 0; b < n; ++b) padding_blocks_.push_back(blocks + b);
    blocks += n;
  }
  cache_ = std::make_unique<PagedKVCache>(
      model_.config(), options_.kv_dtype.value_or(runner_.activation_dtype()), blocks,
      options_.block_size, options_.max_seq_len);
}

std::vector<int> ModelExecutor::execute(const SchedulerOutput& output) {
  // A pass that threw last time may have left rows behind.
  batch_ = ForwardBatch{};
  batch_samplers_.clear();
  batch_sample_index_.clear();
  logprobs_.clear();
  // Copy-on-write copies go with the first pass: it writes into their destinations.
  batch_.block_copies = output.block_copies;

  std::vector<int> sampled(static_cast<std::size_t>(output.num_sampled()), -1);
  const int max_rows = options_.max_tokens_per_step;
  int sample_index = 0;
  for (const ScheduledSequence& s : output.seqs) {
    if (s.block_table == nullptr) {
      throw InvalidArgument("ModelExecutor: request " + std::to_string(s.seq_id) +
                            " is scheduled without a block table");
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
      batch_.add_chunk(s.seq_id, output.input_ids.data() + s.row_begin + done, n,
                       s.start_pos + done, s.block_table);
      if (last && s.sample) {
        batch_.logit_rows.push_back(batch_.rows() - 1);
        batch_samplers_.push_back(&s);
        batch_sample_index_.push_back(sample_index);
      }
      done += n;
    }
    sample_index += s.sample;
  }
  if (options_.compute_wasted_rows) add_padding(output.num_wasted_rows, sampled);
  if (batch_.rows() > 0) run_pass(sampled);
  // A last pass without logits has not synchronized: finish before the caller reads a clock.
  CUDA_CHECK(cudaStreamSynchronize(runner_.stream()));
  return sampled;
}

void ModelExecutor::run_pass(std::vector<int>& sampled) {
  const int vocab = model_.config().vocab_size;
  if (sampler_) {  // the logits stay on the device; only the token ids come back
    std::vector<SamplingParams> params;
    std::vector<std::uint64_t> positions;
    for (const ScheduledSequence* s : batch_samplers_) {
      params.push_back(s->request->seq.sampling);
      positions.push_back(static_cast<std::uint64_t>(s->end_pos()));  // as a solo run
    }
    // The sampling parameters ride in the pass's one upload.
    runner_.forward_on_device(batch_, *cache_, [&](StepStaging& staging) {
      if (!params.empty()) sampler_->stage(staging, params, positions);
    });
    if (!params.empty()) {
      // Only the real rows: a graph's padding rows have logits too, which nobody samples.
      const std::vector<int> tokens = sampler_->sample_staged(runner_.device_logits());
      for (std::size_t i = 0; i < tokens.size(); ++i) {
        sampled[static_cast<std::size_t>(batch_sample_index_[i])] = tokens[i];
      }
      record_logprobs(nullptr, sampled);
    }
  } else {
    const std::vector<float> logits = runner_.forward(batch_, *cache_);
    sample_on_host(logits, vocab, sampled);
    record_logprobs(logits.data(), sampled);
  }
  ++num_passes_;
  for (const SequenceChunk& c : batch_.chunks) num_rows_ += c.seq == kPaddingSeq ? 0 : c.num_tokens;
  batch_ = ForwardBatch{};
  batch_samplers_.clear();
  batch_sample_index_.clear();
}

void ModelExecutor::sample_on_host(const std::vector<float>& logits, int vocab,
                                   std::vector<int>& sampled) const {
  for (std::size_t i = 0; i < batch_samplers_.size(); ++i) {
    const ScheduledSequence& s = *batch_samplers_[i];
    // The token goes to position end_pos(): the same (seed, position) key as a solo run.
    sampled[static_cast<std::size_t>(batch_sample_index_[i])] =
        sample(logits.data() + i * static_cast<std::size_t>(vocab), vocab,
               s.request->seq.sampling, static_cast<std::uint64_t>(s.end_pos()));
  }
}

void ModelExecutor::record_logprobs(const float* host_logits, const std::vector<int>& sampled) {
  const int vocab = model_.config().vocab_size;
  std::vector<float> row;
  for (std::size_t i = 0; i < batch_samplers_.size(); ++i) {
    const int k = batch_samplers_[i]->request->num_logprobs;
    if (k < 0) continue;
    const float* logits = host_logits + i * static_cast<std::size_t>(vocab);
    if (host_logits == nullptr) {  // one row down from the device: only the rows asked for
      row.resize(static_cast<std::size_t>(vocab));
      CUDA_CHECK(cudaMemcpy(row.data(), runner_.device_logits() + i * std::size_t(vocab),
                            row.size() * sizeof(float), cudaMemcpyDeviceToHost));
      logits = row.data();
    }
    if (logprobs_.empty()) logprobs_.resize(sampled.size());
    const auto index = static_cast<std::size_t>(batch_sample_index_[i]);
    logprobs_[index] = token_logprobs(logits, vocab, sampled[index], k);
  }
}

// Padding and idle rows cost a padded batch real rows of the same pass. Here they are one more
// chunk per pass: a padding sequence (token 0 at positions 0..n-1) whose blocks lie past the
// scheduler's, filling the pass up to max_tokens_per_step rows; what does not fit goes into
// further passes, as a padded batch too big for one pass would. Their linear layers cost what
// padded rows cost; their attention spans n positions rather than the batch's, a small
// difference at these sizes.
void ModelExecutor::add_padding(int rows, std::vector<int>& sampled) {
  const int capacity = static_cast<int>(padding_blocks_.size()) * options_.block_size;
  for (int left = rows; left > 0;) {
    int n = std::min({left, options_.max_tokens_per_step - batch_.rows(), capacity,
                      options_.max_seq_len});
    if (n == 0) {  // the pass is full
      run_pass(sampled);
      continue;
    }
    SequenceChunk c;
    c.seq = kPaddingSeq;
    c.start_pos = 0;
    c.num_tokens = n;
    c.block_ids = padding_blocks_;
    batch_.chunks.push_back(std::move(c));
    batch_.tokens.insert(batch_.tokens.end(), static_cast<std::size_t>(n), 0);
    for (int p = 0; p < n; ++p) {
      batch_.slot_mapping.push_back(
          std::int64_t(padding_blocks_[std::size_t(p / options_.block_size)]) *
              options_.block_size + p % options_.block_size);
    }
    num_wasted_rows_ += n;
    left -= n;
    if (left > 0) run_pass(sampled);  // one padding chunk per pass
  }
}

std::string ModelExecutor::device_name() const {
  return engine::device_name() + " · kernels, " + dtype_name(model_.dtype()) +
         " weights, paged KV";
}

}  // namespace nanoserve::engine
