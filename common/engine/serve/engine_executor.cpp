#include "common/engine/serve/engine_executor.h"

#include <algorithm>
#include <string>

#include "common/engine/model/device_info.h"
#include "common/engine/serve/scheduler.h"
#include "common/error.h"
#include "common/sampling/sampler.h"
#include "common/speculative/rejection.h"

namespace nanoserve::engine {

namespace {

RunnerOptions runner_options(const DeviceModel& model, const EngineExecutorOptions& o) {
  const int context = model.config().max_seq_len;
  if (o.max_seq_len < 0 || o.max_seq_len > context) {
    throw InvalidArgument("EngineExecutor: max_seq_len = " + std::to_string(o.max_seq_len) +
                          " is outside [0, " + std::to_string(context) +
                          "] (0 = the context of model '" + model.config().name + "')");
  }
  return {o.max_tokens_per_step, o.max_logit_rows, o.activation_dtype};  // runner checks >= 1
}

// A sequence whose sampled entries come from the host: a verification (every row's p), or a
// prompt whose last row also gives the first tokens of its forked samples.
bool samples_on_host(const ScheduledSequence& s) {
  return s.sample && (s.num_draft_tokens > 0 || !s.forks.empty());
}

}  // namespace

EngineExecutorOptions engine_executor_options_for(const SchedulerConfig& config, int max_gamma) {
  EngineExecutorOptions o;
  o.max_tokens_per_step = config.max_num_batched_tokens;
  const long long logit_rows = (long long)config.max_num_seqs * (1 + std::max(0, max_gamma));
  o.max_logit_rows = int(std::max(1LL, std::min<long long>(config.max_num_batched_tokens, logit_rows)));
  o.max_seq_len = config.max_model_len;
  o.num_kv_blocks = config.num_kv_blocks;
  o.block_size = config.block_size;
  o.num_host_blocks = config.num_host_blocks;
  return o;
}

EngineExecutor::EngineExecutor(const DeviceModel& model, EngineExecutorOptions options)
    : model_(model), options_(options), runner_(model, runner_options(model, options)) {
  if (options_.max_seq_len == 0) options_.max_seq_len = model.config().max_seq_len;
  if (options_.num_kv_blocks < 1 || options_.block_size < 1) {
    throw InvalidArgument("EngineExecutor: need num_kv_blocks >= 1 and block_size >= 1, got " +
                          std::to_string(options_.num_kv_blocks) + " and " +
                          std::to_string(options_.block_size));
  }
  if (options_.device_sampling) {
    sampler_ = std::make_unique<DeviceSampler>(options_.max_logit_rows, model.config().vocab_size,
                                               runner_.stream());
  }
  cache_ = std::make_unique<PagedKVCache>(
      model_.config(), options_.kv_dtype.value_or(runner_.activation_dtype()),
      options_.num_kv_blocks, options_.block_size, options_.max_seq_len);
  if (options_.num_host_blocks < 0) {
    throw InvalidArgument("EngineExecutor: num_host_blocks = " +
                          std::to_string(options_.num_host_blocks) + " must be >= 0");
  }
  if (options_.num_host_blocks > 0) {
    host_ = std::make_unique<HostKVPool>(*cache_, options_.num_host_blocks);
  }
}

std::vector<int> EngineExecutor::execute(const SchedulerOutput& output) {
  // Swaps first, on the pass's stream: out before in, both before anything writes a block.
  if (!output.blocks_to_swap_out.empty() || !output.blocks_to_swap_in.empty()) {
    if (!host_) {
      throw InvalidArgument("EngineExecutor: the step swaps blocks but the executor has no host "
                            "pool (num_host_blocks = 0)");
    }
    host_->swap_out(*cache_, output.blocks_to_swap_out, runner_.stream());
    host_->swap_in(*cache_, output.blocks_to_swap_in, runner_.stream());
    stats_.blocks_swapped_out += static_cast<long long>(output.blocks_to_swap_out.size());
    stats_.blocks_swapped_in += static_cast<long long>(output.blocks_to_swap_in.size());
  }
  if (output.seqs.empty()) {  // a step that only swapped
    CUDA_CHECK(cudaStreamSynchronize(runner_.stream()));
    return {};
  }
  // Where each sequence's entries go in the result, in output order.
  std::vector<std::size_t> offsets;
  std::size_t total = 0;
  for (const ScheduledSequence& s : output.seqs) {
    if (s.block_table == nullptr) {
      throw InvalidArgument("EngineExecutor: request " + std::to_string(s.seq_id) +
                            " is scheduled without a block table");
    }
    offsets.push_back(total);
    total += std::size_t(s.num_sampled_tokens());
  }
  // Chunks in three groups, so that the device-sampled logit rows come first and contiguous.
  std::vector<const ScheduledSequence*> plain, quiet, host;
  std::vector<std::size_t> plain_at, host_at;
  for (std::size_t i = 0; i < output.seqs.size(); ++i) {
    const ScheduledSequence& s = output.seqs[i];
    if (!s.sample) {
      quiet.push_back(&s);
    } else if (samples_on_host(s)) {
      host.push_back(&s);
      host_at.push_back(offsets[i]);
    } else {
      plain.push_back(&s);
      plain_at.push_back(offsets[i]);
    }
  }
  batch_ = ForwardBatch{};
  batch_.block_copies = output.block_copies;
  for (const auto* group : {&plain, &quiet, &host}) {
    for (const ScheduledSequence* s : *group) {
      batch_.add_chunk(s->seq_id, output.input_ids.data() + s->row_begin, s->num_tokens,
                       s->start_pos, s->block_table);
      for (int i = s->num_tokens - s->num_logit_rows(); i < s->num_tokens; ++i) {
        batch_.logit_rows.push_back(batch_.rows() - s->num_tokens + i);
      }
    }
  }
  runner_.forward_on_device(batch_, *cache_);  // checks the sizes before any kernel runs

  std::vector<int> sampled(total, -1);
  const int vocab = model_.config().vocab_size;
  const int m = static_cast<int>(plain.size());  // logit rows 0 .. m-1: plain sequences
  if (sampler_ && m > 0) {
    std::vector<SamplingParams> params;
    std::vector<std::uint64_t> positions;
    for (const ScheduledSequence* s : plain) {
      params.push_back(s->request->seq.sampling);
      positions.push_back(std::uint64_t(s->end_pos()));  // as a solo run
    }
    const std::vector<int> tokens = sampler_->sample(runner_.device_logits(), params, positions);
    for (int i = 0; i < m; ++i) sampled[plain_at[std::size_t(i)]] = tokens[std::size_t(i)];
  }
  // The rows the host needs: every logit row without a device sampler, else the host group's.
  const int first = sampler_ ? m : 0;
  const std::size_t rows = batch_.logit_rows.size() - std::size_t(first);
  host_logits_.resize(rows * std::size_t(vocab));
  if (rows > 0) {
    CUDA_CHECK(cudaMemcpyAsync(host_logits_.data(),
                               runner_.device_logits() + std::size_t(first) * vocab,
                               host_logits_.size() * sizeof(float), cudaMemcpyDeviceToHost,
                               runner_.stream()));
    CUDA_CHECK(cudaStreamSynchronize(runner_.stream()));
  }
  if (!sampler_) {
    for (int i = 0; i < m; ++i) {
      const ScheduledSequence& s = *plain[std::size_t(i)];
      sampled[plain_at[std::size_t(i)]] =
          sample(host_logits_.data() + std::size_t(i) * vocab, vocab, s.request->seq.sampling,
                 std::uint64_t(s.end_pos()));
    }
  }
  // Verifications: chapter 6's rule on the 1 + k rows of each; forks: one row, n draws.
  std::size_t row = sampler_ ? 0 : std::size_t(m);
  for (std::size_t i = 0; i < host.size(); ++i) {
    const ScheduledSequence& s = *host[i];
    const Request& r = *s.request;
    if (!s.forks.empty()) {
      const float* logits = host_logits_.data() + row * std::size_t(vocab);
      const std::uint64_t pos = std::uint64_t(s.end_pos());
      sampled[host_at[i]] = sample(logits, vocab, r.seq.sampling, pos);
      for (std::size_t f = 0; f < s.forks.size(); ++f) {
        sampled[host_at[i] + 1 + f] = sample(logits, vocab, s.forks[f]->seq.sampling, pos);
      }
      row += 1;
      continue;
    }
    const std::size_t k = std::size_t(s.num_draft_tokens);
    speculative::Proposal proposal;
    proposal.tokens.assign(r.draft.tokens.begin(), r.draft.tokens.begin() + std::ptrdiff_t(k));
    if (!r.draft.q.empty()) {
      proposal.q.assign(r.draft.q.begin(), r.draft.q.begin() + std::ptrdiff_t(k));
    }
    const std::vector<float> logits(host_logits_.begin() + std::ptrdiff_t(row * vocab),
                                    host_logits_.begin() + std::ptrdiff_t((row + k + 1) * vocab));
    const speculative::VerifyResult v =
        speculative::verify_proposal(logits, vocab, proposal, r.seq.sampling, s.first_sample_pos());
    std::copy(v.tokens.begin(), v.tokens.end(), sampled.begin() + std::ptrdiff_t(host_at[i]));
    row += k + 1;
  }
  CUDA_CHECK(cudaStreamSynchronize(runner_.stream()));  // a pass without logits is not done yet
  ++stats_.passes;
  stats_.rows += batch_.rows();
  stats_.draft_rows += output.num_draft_rows();
  stats_.logit_rows += static_cast<long long>(batch_.logit_rows.size());
  stats_.host_logit_rows += static_cast<long long>(rows);
  return sampled;
}

std::string EngineExecutor::device_name() const {
  return engine::device_name() + " · kernels, " + dtype_name(model_.dtype()) +
         " weights, paged KV";
}

}  // namespace nanoserve::engine
