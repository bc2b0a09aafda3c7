// ModelExecutor: one pass — its shares grouped so the device-sampled logit rows come first,
// the forward, then every logit row decided: on the device (plain rows) or on the host
// (verifications by the rejection rule, forks one draw per sample, everything without a
// device sampler), and the log-probabilities of the requests that asked.
#include <algorithm>
#include <string>
#include <utility>

#include "common/engine/serve/model_executor.h"
#include "common/error.h"
#include "common/sampling/sampler.h"
#include "common/speculative/rejection.h"

namespace nanoserve::engine {

namespace {
// The padding sequence's id in a batch (only a label: the paged cache addresses by blocks).
constexpr std::int64_t kPaddingSeq = -1;
}  // namespace

//     shares as planned:   [A prefill chunk][B decode][C verify 1+k][D decode]
//     the pass's chunks:   [B][D] | [A] | [C]          logit rows: B D | (none) | C's 1 + k
//                          device   quiet   host
// Chunks of different sequences are independent within a pass (every layer writes all rows'
// K/V before attending), so the order is free; a sequence has at most one share per pass.
ForwardBatch ModelExecutor::batch_of(const std::vector<const Share*>& order) const {
  ForwardBatch b;
  const int bs = options_.block_size;
  for (const Share* share : order) {
    if (share->seq == nullptr) {  // padding: token 0 at positions 0 .. n-1, its own blocks
      SequenceChunk c;
      c.seq = kPaddingSeq;
      c.num_tokens = share->num_tokens;
      c.block_ids = padding_blocks_;
      b.chunks.push_back(std::move(c));
      b.tokens.insert(b.tokens.end(), std::size_t(share->num_tokens), 0);
      for (int p = 0; p < share->num_tokens; ++p) {
        b.slot_mapping.push_back(std::int64_t(padding_blocks_[std::size_t(p / bs)]) * bs + p % bs);
      }
      continue;
    }
    const ScheduledSequence& s = *share->seq;
    b.add_chunk(s.seq_id, share->tokens, share->num_tokens, s.start_pos + share->offset,
                s.block_table);
    for (int i = share->num_tokens - share->num_logit_rows; i < share->num_tokens; ++i) {
      b.logit_rows.push_back(b.rows() - share->num_tokens + i);
    }
  }
  return b;
}

void ModelExecutor::run_pass(std::vector<int>& result) {
  if (shares_.empty()) return;
  std::vector<const Share*> device, quiet, host;
  for (const Share& s : shares_) {
    const Decided d = decided(s);
    (d == Decided::kOnDevice ? device : d == Decided::kOnHost ? host : quiet).push_back(&s);
  }
  std::vector<const Share*> order = device;
  order.insert(order.end(), quiet.begin(), quiet.end());
  order.insert(order.end(), host.begin(), host.end());
  ForwardBatch batch = batch_of(order);
  batch.block_copies = std::exchange(pass_copies_, {});

  // The device-sampled rows' parameters ride in the pass's one upload.
  std::vector<SamplingParams> params;
  std::vector<std::uint64_t> positions;
  for (const Share* s : device) {
    params.push_back(s->seq->request->seq.sampling);
    positions.push_back(std::uint64_t(s->seq->end_pos()));  // as a solo run
  }
  runner_.forward_on_device(batch, *cache_, [&](StepStaging& staging) {
    if (!params.empty()) sampler_->stage(staging, params, positions);
  });
  if (!device.empty()) sample_on_device(device, result);
  // The host's rows: the logit rows after the device-sampled ones (one download).
  const std::size_t first = device.size();
  const std::size_t rows = batch.logit_rows.size() - first;
  const int vocab = runner_.vocab_size();
  host_logits_.resize(rows * std::size_t(vocab));
  if (rows > 0) {
    CUDA_CHECK(cudaMemcpyAsync(host_logits_.data(), runner_.device_logits() + first * vocab,
                               host_logits_.size() * sizeof(float), cudaMemcpyDeviceToHost,
                               runner_.stream()));
    CUDA_CHECK(cudaStreamSynchronize(runner_.stream()));
    decide_on_host(host, host_logits_.data(), result);
  }

  for (const Share& s : shares_) {
    if (s.seq == nullptr) {
      stats_.wasted_rows += s.num_tokens;
      continue;
    }
    stats_.rows += s.num_tokens;
    if (s.num_logit_rows > 0) stats_.draft_rows += s.seq->num_draft_tokens;
  }
  stats_.logit_rows += static_cast<long long>(batch.logit_rows.size());
  stats_.host_logit_rows += static_cast<long long>(rows);
  shares_.clear();
  pass_rows_ = pass_logit_rows_ = 0;
}

void ModelExecutor::sample_on_device(const std::vector<const Share*>& shares,
                                     std::vector<int>& result) {
  // Only the real rows: a graph's padding rows have logits too, which nobody samples.
  const std::vector<int> tokens = sampler_->sample_staged(runner_.device_logits());
  const int vocab = runner_.vocab_size();
  std::vector<float> row;
  for (std::size_t i = 0; i < shares.size(); ++i) {
    const Share& s = *shares[i];
    result[s.result_at] = tokens[i];
    if (s.seq->request->num_logprobs < 0) continue;
    row.resize(std::size_t(vocab));  // one row down from the device: only the rows asked for
    CUDA_CHECK(cudaMemcpy(row.data(), runner_.device_logits() + i * std::size_t(vocab),
                          row.size() * sizeof(float), cudaMemcpyDeviceToHost));
    record_logprobs(s, row.data(), result);
  }
}

// Rows in `shares` order, each share's num_logit_rows of them: a plain row sampled, a forked
// row drawn once per sample with its seed, a verification's 1 + k rows through the rejection
// rule (chapter 6), each draw keyed by the request's seed and the token's position.
void ModelExecutor::decide_on_host(const std::vector<const Share*>& shares, const float* logits,
                                   std::vector<int>& result) {
  const std::size_t vocab = std::size_t(runner_.vocab_size());
  for (const Share* share : shares) {
    const ScheduledSequence& s = *share->seq;
    const Request& r = *s.request;
    const std::uint64_t pos = std::uint64_t(s.end_pos());
    if (s.num_draft_tokens == 0) {
      result[share->result_at] = sample(logits, int(vocab), r.seq.sampling, pos);
      for (std::size_t f = 0; f < s.forks.size(); ++f) {
        result[share->result_at + 1 + f] = sample(logits, int(vocab), s.forks[f]->seq.sampling, pos);
      }
    } else {
      const auto k = static_cast<std::ptrdiff_t>(s.num_draft_tokens);
      speculative::Proposal proposal;
      proposal.tokens.assign(r.draft.tokens.begin(), r.draft.tokens.begin() + k);
      if (!r.draft.q.empty()) {
        if (r.draft.q.size() < std::size_t(k)) {
          throw InvalidArgument("ModelExecutor: request " + std::to_string(s.seq_id) + " has " +
                                std::to_string(r.draft.q.size()) + " q rows for " +
                                std::to_string(k) + " drafts");
        }
        proposal.q.assign(r.draft.q.begin(), r.draft.q.begin() + k);
      }
      const std::vector<float> rows(logits, logits + std::size_t(k + 1) * vocab);
      const speculative::VerifyResult v = speculative::verify_proposal(
          rows, int(vocab), proposal, r.seq.sampling, s.first_sample_pos());
      std::copy(v.tokens.begin(), v.tokens.end(),
                result.begin() + std::ptrdiff_t(share->result_at));
    }
    record_logprobs(*share, logits, result);
    logits += std::size_t(share->num_logit_rows) * vocab;
  }
}

// The log-probabilities of a share's entries whose requests asked: entry j of a verification
// from its row j (the row that decided it), a fork's from the shared row with the fork's k.
void ModelExecutor::record_logprobs(const Share& share, const float* logits,
                                    const std::vector<int>& result) {
  const ScheduledSequence& s = *share.seq;
  const int vocab = runner_.vocab_size();
  auto record = [&](std::size_t entry, const float* row, int k) {
    if (k < 0 || result[entry] < 0) return;
    if (logprobs_.empty()) logprobs_.resize(result.size());
    logprobs_[entry] = token_logprobs(row, vocab, result[entry], k);
  };
  for (int j = 0; j < share.num_logit_rows; ++j) {
    record(share.result_at + std::size_t(j), logits + std::size_t(j) * vocab, s.request->num_logprobs);
  }
  for (std::size_t f = 0; f < s.forks.size(); ++f) {
    record(share.result_at + 1 + f, logits, s.forks[f]->num_logprobs);
  }
}

}  // namespace nanoserve::engine
