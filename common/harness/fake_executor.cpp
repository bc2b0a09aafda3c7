#include "common/harness/fake_executor.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "common/error.h"
#include "common/sampling/rng.h"

namespace nanoserve::harness {
namespace {

/// splitmix64's finalizer: a cheap bijective mix with good avalanche.
uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

int fake_next_token(const SamplingParams& sampling, const int* tokens, int n, int vocab_size) {
  uint64_t h = 0x9E3779B97F4A7C15ull;
  for (int i = 0; i < n; ++i) {
    h = mix64(h ^ ((uint64_t(uint32_t(tokens[i])) << 32) | uint32_t(i)));
  }
  if (!sampling.greedy()) {
    const Philox4x32 r = random_bits(sampling.seed, uint64_t(n), RngStream::kSample);
    h = mix64(h ^ ((uint64_t(r[0]) << 32) | r[1]));
  }
  return static_cast<int>(h % uint64_t(vocab_size));
}

engine::Request fake_reference_run(engine::Request r, int vocab_size, int max_model_len,
                           const engine::Detokenizer& detokenize) {
  r.status = engine::RequestStatus::kRunning;
  for (double t = 1;; t += 1) {
    const int token = fake_next_token(r.seq.sampling, r.seq.token_ids.data(), r.seq.num_tokens(),
                                      vocab_size);
    if (engine::append_token(r, token, t, max_model_len, detokenize)) return r;
  }
}

FakeExecutor::FakeExecutor(int num_blocks, int block_size, int vocab_size,
                           engine::SimulatedClock* clock, FakeCostModel cost)
    : block_size_(block_size), vocab_size_(vocab_size), clock_(clock), cost_(cost) {
  if (num_blocks < 1 || block_size < 1 || vocab_size < 1) {
    throw InvalidArgument("FakeExecutor: num_blocks = " + std::to_string(num_blocks) +
                          ", block_size = " + std::to_string(block_size) +
                          ", vocab_size = " + std::to_string(vocab_size) + " must all be >= 1");
  }
  kv_.resize(size_t(num_blocks) * size_t(block_size));
}

std::vector<int> FakeExecutor::execute(const engine::SchedulerOutput& out) {
  const auto slot_at = [&](int64_t slot, const engine::ScheduledSequence& s, int pos) -> KVSlot& {
    if (slot < 0 || size_t(slot) >= kv_.size()) {
      throw std::logic_error("FakeExecutor: request " + std::to_string(s.seq_id) +
                             " position " + std::to_string(pos) + " maps to slot " +
                             std::to_string(slot) + " outside the pool");
    }
    return kv_[size_t(slot)];
  };

  // 0. Swaps (chapter 7): device blocks to the host pool, then back, before anything else.
  const auto block = [&](std::vector<KVSlot>& pool, int b) { return pool.begin() + std::ptrdiff_t(b) * block_size_; };
  for (const engine::BlockSwap& sw : out.blocks_to_swap_out) {
    if (host_.size() < std::size_t(sw.host + 1) * std::size_t(block_size_)) {
      host_.resize(std::size_t(sw.host + 1) * std::size_t(block_size_));
    }
    std::copy(block(kv_, sw.device), block(kv_, sw.device + 1), block(host_, sw.host));
  }
  for (const engine::BlockSwap& sw : out.blocks_to_swap_in) {
    std::copy(block(host_, sw.host), block(host_, sw.host + 1), block(kv_, sw.device));
    std::fill(block(host_, sw.host), block(host_, sw.host + 1), KVSlot{});  // a stale copy must not be read again
  }
  // 1. Copy-on-write copies, before anything is written.
  for (const engine::BlockCopy& c : out.block_copies) {
    for (int i = 0; i < block_size_; ++i) {
      kv_[size_t(c.dst) * size_t(block_size_) + size_t(i)] =
          kv_[size_t(c.src) * size_t(block_size_) + size_t(i)];
    }
  }
  // 2. Every row's K/V goes to its slot — all sequences before any reads, as the KV manager's
  //    contract requires (a request admitted in this step may hit blocks written now).
  for (const engine::ScheduledSequence& s : out.seqs) {
    for (int i = 0; i < s.num_tokens; ++i) {
      const int row = s.row_begin + i;
      const int pos = out.positions[size_t(row)];
      const int64_t slot = out.slot_mapping[size_t(row)];
      if (pos != s.start_pos + i || slot != s.block_table->slot(pos)) {
        throw std::logic_error("FakeExecutor: row " + std::to_string(row) + " of request " +
                               std::to_string(s.seq_id) +
                               " disagrees with its block table or position");
      }
      slot_at(slot, s, pos) = {out.input_ids[size_t(row)], pos};
    }
  }
  // 3. Each sampling sequence reads its whole context back through its block table.
  std::vector<int> sampled;
  for (const engine::ScheduledSequence& s : out.seqs) {
    if (!s.sample) continue;
    context_.clear();
    for (int pos = 0; pos < s.end_pos(); ++pos) {
      const int64_t slot = s.block_table->slot(pos);
      const KVSlot& kv = slot_at(slot, s, pos);
      if (kv.position != pos) {
        throw std::logic_error(
            "FakeExecutor: request " + std::to_string(s.seq_id) + " reads position " +
            std::to_string(pos) + " from slot " + std::to_string(slot) +
            (kv.position < 0 ? ", which was never written"
                             : ", which holds position " + std::to_string(kv.position)));
      }
      context_.push_back(kv.token);
    }
    // Logit row i predicts position first_sample_pos() + i. With drafts, the fake model is its
    // own verifier: a draft stands when it equals the fake model's token there (the fake is a
    // deterministic function of context and seed, so this is exact rejection sampling for it).
    const int k = s.num_draft_tokens;
    for (int i = 0; i <= k; ++i) {
      const int len = s.first_sample_pos() + i;
      const int token = fake_next_token(s.request->seq.sampling, context_.data(), len, vocab_size_);
      sampled.push_back(token);
      if (i < k && token != context_[std::size_t(len)]) {  // rejected: pad the rest
        sampled.insert(sampled.end(), std::size_t(k - i), -1);
        break;
      }
    }
    // Samples forked in this step: the same context, each with its own seed.
    for (const engine::Request* fork : s.forks) {
      sampled.push_back(fake_next_token(fork->seq.sampling, context_.data(), s.end_pos(), vocab_size_));
    }
  }
  const int rows = out.num_batched_tokens() + out.num_wasted_rows;
  ++num_steps_;
  num_rows_ += rows;
  if (clock_ != nullptr) clock_->advance(cost_.pass_s ? cost_.pass_s(out) : cost_.step_s + cost_.row_s * rows);
  return sampled;
}

}  // namespace nanoserve::harness
