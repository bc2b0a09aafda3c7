// ModelExecutor: options, the checks of a plan, swaps, and how a plan is cut into passes
// (model_executor_pass.cpp runs one pass and decides its tokens).
#include "common/engine/serve/model_executor.h"

#include <algorithm>
#include <string>

#include "common/engine/model/device_info.h"
#include "common/engine/model/tensor_parallel_group.h"
#include "common/engine/serve/scheduler.h"
#include "common/engine/serve/static_batcher.h"
#include "common/error.h"

namespace nanoserve::engine {

namespace {

RunnerOptions runner_options(const DeviceModel& model, const ModelExecutorOptions& o) {
  const int context = model.config().max_seq_len;
  if (o.max_seq_len < 0 || o.max_seq_len > context) {
    throw InvalidArgument("ModelExecutor: max_seq_len = " + std::to_string(o.max_seq_len) +
                          " is outside [0, " + std::to_string(context) +
                          "] (0 = the context of model '" + model.config().name + "')");
  }
  RunnerOptions r{o.max_tokens_per_step, o.max_logit_rows, o.activation_dtype};  // checks >= 1
  r.cuda_graphs = o.cuda_graphs;
  r.tensor_parallel = o.tensor_parallel;
  return r;
}

std::string who(const ScheduledSequence& s) {
  return "ModelExecutor: request " + std::to_string(s.seq_id);
}

}  // namespace

std::vector<int> graph_buckets(const ModelExecutorOptions& o) {
  RunnerOptions r{o.max_tokens_per_step, o.max_logit_rows};
  r.cuda_graphs = o.cuda_graphs;
  return graph_buckets(r);
}

ModelExecutorOptions executor_options_for(const SchedulerConfig& config, int max_gamma) {
  ModelExecutorOptions o;
  o.max_tokens_per_step = config.max_num_batched_tokens;
  const long long logit_rows = (long long)config.max_num_seqs * (1 + std::max(0, max_gamma));
  o.max_logit_rows =
      int(std::max(1LL, std::min<long long>(config.max_num_batched_tokens, logit_rows)));
  o.max_seq_len = config.max_model_len;
  o.num_kv_blocks = config.num_kv_blocks;
  o.block_size = config.block_size;
  o.num_host_blocks = config.num_host_blocks;
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
  if (options_.num_host_blocks < 0) {
    throw InvalidArgument("ModelExecutor: num_host_blocks = " +
                          std::to_string(options_.num_host_blocks) + " must be >= 0");
  }
  if (options_.tensor_parallel != nullptr && options_.num_host_blocks > 0) {
    // Swaps are copies rank 0 would make alone: the plan each pass broadcasts has no room for them.
    throw InvalidArgument("ModelExecutor: num_host_blocks = " +
                          std::to_string(options_.num_host_blocks) +
                          " under tensor parallelism (swapping is not tensor-parallel yet)");
  }
  if (options_.device_sampling) {
    sampler_ = std::make_unique<DeviceSampler>(options_.max_logit_rows, runner_.vocab_size(),
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
  if (options_.num_host_blocks > 0) {
    host_ = std::make_unique<HostKVPool>(*cache_, options_.num_host_blocks);
  }
}

// Everything the executor itself relies on, before anything runs (the cache checks the slots
// and tables when a pass is staged; the rejection rule checks the drafts' q rows).
void ModelExecutor::check_plan(const SchedulerOutput& output) const {
  const bool swaps = !output.blocks_to_swap_out.empty() || !output.blocks_to_swap_in.empty();
  if (swaps && !host_) {
    throw InvalidArgument("ModelExecutor: the step swaps blocks but the executor has no host "
                          "pool (num_host_blocks = 0; size it with executor_options_for)");
  }
  if (output.num_wasted_rows < 0) {
    throw InvalidArgument("ModelExecutor: num_wasted_rows = " +
                          std::to_string(output.num_wasted_rows) + " is negative");
  }
  for (const ScheduledSequence& s : output.seqs) {
    if (s.block_table == nullptr) throw InvalidArgument(who(s) + " is scheduled without a block table");
    if (s.request == nullptr) throw InvalidArgument(who(s) + " is scheduled without its request");
    const int k = s.num_draft_tokens;
    if (k < 0 || k >= s.num_tokens || (k > 0 && !s.sample)) {
      throw InvalidArgument(who(s) + " has num_draft_tokens = " + std::to_string(k) + " in a run of " +
                            std::to_string(s.num_tokens) + " rows that " +
                            (s.sample ? "samples" : "does not sample") +
                            ": drafts follow the last token of a sampling run");
    }
    if (k > static_cast<int>(s.request->draft.tokens.size())) {
      throw InvalidArgument(who(s) + " verifies " + std::to_string(k) + " drafts but carries " +
                            std::to_string(s.request->draft.tokens.size()));
    }
    if (!s.forks.empty() && (!s.sample || k > 0)) {
      throw InvalidArgument(who(s) + " forks " + std::to_string(s.forks.size()) +
                            " samples from a run that " +
                            (k > 0 ? "verifies drafts" : "does not sample"));
    }
    const int most = std::min(options_.max_logit_rows, options_.max_tokens_per_step);
    if (s.num_logit_rows() > most) {
      throw InvalidArgument(who(s) + " needs " + std::to_string(s.num_logit_rows()) +
                            " logit rows in one pass but max_logit_rows = " +
                            std::to_string(options_.max_logit_rows) + " and max_tokens_per_step = " +
                            std::to_string(options_.max_tokens_per_step) +
                            " (size it with executor_options_for(config, max_gamma))");
    }
  }
}

// Swaps first, on the pass's stream: out before in, both before anything writes a block.
void ModelExecutor::swap(const SchedulerOutput& output) {
  if (!host_) return;  // check_plan refused swaps without a pool
  host_->swap_out(*cache_, output.blocks_to_swap_out, runner_.stream());
  host_->swap_in(*cache_, output.blocks_to_swap_in, runner_.stream());
  stats_.blocks_swapped_out += static_cast<long long>(output.blocks_to_swap_out.size());
  stats_.blocks_swapped_in += static_cast<long long>(output.blocks_to_swap_in.size());
}

ModelExecutor::Decided ModelExecutor::decided(const Share& share) const {
  if (share.num_logit_rows == 0) return Decided::kNothing;
  const bool plain = share.seq->num_draft_tokens == 0 && share.seq->forks.empty();
  return plain && sampler_ ? Decided::kOnDevice : Decided::kOnHost;
}

std::vector<int> ModelExecutor::execute(const SchedulerOutput& output) {
  check_plan(output);
  // A pass that threw last time may have left shares behind.
  shares_.clear();
  pass_rows_ = pass_logit_rows_ = 0;
  logprobs_.clear();
  swap(output);
  // Copy-on-write copies go with the first pass: it writes into their destinations.
  pass_copies_ = output.block_copies;

  std::vector<int> result(static_cast<std::size_t>(output.num_sampled()), -1);
  const int max_rows = options_.max_tokens_per_step;
  std::size_t result_at = 0;
  for (const ScheduledSequence& s : output.seqs) {
    // The run's rows, in pieces that fit the pass being built; its logit rows (the last L)
    // stay together, in a pass with room for their logits.
    const int L = s.num_logit_rows();
    const int tail = s.num_tokens - L;  // first logit row of the run
    for (int done = 0; done < s.num_tokens;) {
      int n = std::min(max_rows - pass_rows_, s.num_tokens - done);
      const bool ends = done + n == s.num_tokens;
      if (L > 0 && ends && pass_logit_rows_ + L > options_.max_logit_rows) n = 0;
      if (L > 0 && !ends && done + n > tail) n = tail - done;  // stop short of the logit rows
      if (n <= 0) {
        run_pass(result);
        continue;
      }
      const int* tokens = output.input_ids.data() + s.row_begin + done;
      const Share share{&s, tokens, done, n, ends ? L : 0, result_at};
      shares_.push_back(share);
      pass_rows_ += n;
      pass_logit_rows_ += share.num_logit_rows;
      done += n;
    }
    result_at += std::size_t(s.num_sampled_tokens());
  }
  if (options_.compute_wasted_rows) add_padding(output.num_wasted_rows, result);
  if (pass_rows_ > 0) run_pass(result);
  // A last pass without logits, or a step that only swapped, has not synchronized: finish
  // before the caller reads a clock.
  CUDA_CHECK(cudaStreamSynchronize(runner_.stream()));
  return result;
}

long long ModelExecutor::follow(bool wait_forever) {
  return follow_plans(runner_, *cache_, wait_forever);
}

// Padding and idle rows cost a padded batch real rows of the same pass. Here they are one more
// share per pass: a padding sequence (token 0 at positions 0..n-1) whose blocks lie past the
// scheduler's, filling the pass up to max_tokens_per_step rows; what does not fit goes into
// further passes, as a padded batch too big for one pass would. Their linear layers cost what
// padded rows cost; their attention spans n positions rather than the batch's, a small
// difference at these sizes.
void ModelExecutor::add_padding(int rows, std::vector<int>& result) {
  const int capacity = static_cast<int>(padding_blocks_.size()) * options_.block_size;
  for (int left = rows; left > 0;) {
    const int n = std::min({left, options_.max_tokens_per_step - pass_rows_, capacity,
                            options_.max_seq_len});
    if (n == 0) {  // the pass is full
      run_pass(result);
      continue;
    }
    shares_.push_back(Share{nullptr, nullptr, 0, n, 0, 0});
    pass_rows_ += n;
    left -= n;
    if (left > 0) run_pass(result);  // one padding share per pass
  }
}

std::string ModelExecutor::device_name() const {
  const TensorParallelGroup* tp = options_.tensor_parallel;
  return engine::device_name() + " · kernels, " + dtype_name(model_.dtype()) +
         " weights, paged KV" +
         (tp != nullptr ? ", tensor-parallel " + std::to_string(tp->size()) : std::string());
}

}  // namespace nanoserve::engine
