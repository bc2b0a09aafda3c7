#include "common/speculative/spec_decoder.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>

#include "common/error.h"
#include "common/speculative/rejection.h"

namespace nanoserve::speculative {

double SpecStats::acceptance_rate() const {
  const int64_t judged = accepted + rejected;
  return judged == 0 ? 0.0 : double(accepted) / double(judged);
}

double SpecStats::tokens_per_target_forward() const {
  return rounds == 0 ? 0.0 : double(generated) / double(rounds);
}

double expected_tokens_per_round(double alpha, int gamma) {
  if (alpha >= 1.0) return gamma + 1.0;
  return (1.0 - std::pow(alpha, gamma + 1)) / (1.0 - alpha);
}

double predicted_speedup(double alpha, int gamma, double c) {
  return expected_tokens_per_round(alpha, gamma) / (gamma * c + 1.0);
}

double expected_tokens_per_round(double alpha, const std::vector<int64_t>& rounds_offering) {
  double tokens = 0, rounds = 0;
  for (std::size_t k = 0; k < rounds_offering.size(); ++k) {
    tokens += double(rounds_offering[k]) * expected_tokens_per_round(alpha, int(k));
    rounds += double(rounds_offering[k]);
  }
  return rounds > 0 ? tokens / rounds : 0.0;
}

double predicted_speedup(double alpha, const std::vector<int64_t>& rounds_offering, double c,
                         double verify) {
  double tokens = 0, cost = 0;
  for (std::size_t k = 0; k < rounds_offering.size(); ++k) {
    const double n = double(rounds_offering[k]);
    tokens += n * expected_tokens_per_round(alpha, int(k));
    cost += n * (double(k) * c + verify);
  }
  return cost > 0 ? tokens / cost : 0.0;
}

SpecDecoder::SpecDecoder(RollbackDecoder& target, Proposer& proposer, SpecOptions options)
    : target_(target), proposer_(proposer), options_(std::move(options)) {
  if (options_.gamma < 1) {
    throw InvalidArgument("speculative decoding: gamma = " + std::to_string(options_.gamma) +
                          " must be >= 1");
  }
  if (options_.adaptive && options_.max_gamma < options_.gamma) {
    throw InvalidArgument("speculative decoding: max_gamma = " +
                          std::to_string(options_.max_gamma) + " is below gamma = " +
                          std::to_string(options_.gamma));
  }
  const int vocab = proposer_.vocab_size();
  if (vocab != 0 && vocab != target_.vocab_size()) {
    throw InvalidArgument("speculative decoding: proposer '" + proposer_.name() + "' has " +
                          std::to_string(vocab) + " tokens but the target '" + target_.name() +
                          "' has " + std::to_string(target_.vocab_size()) +
                          "; a draft must share the target's tokenizer");
  }
}

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

void check_request(const std::vector<int>& prompt, const GenerateOptions& options, int vocab,
                   int context) {
  if (prompt.empty()) throw InvalidArgument("speculative generate: the prompt has no tokens");
  if (int(prompt.size()) > context) {
    throw InvalidArgument("speculative generate: the prompt has " +
                          std::to_string(prompt.size()) + " tokens but the context holds " +
                          std::to_string(context));
  }
  if (options.max_new_tokens < 0) {
    throw InvalidArgument("speculative generate: max_new_tokens = " +
                          std::to_string(options.max_new_tokens) + " must be >= 0");
  }
  for (int t : prompt) {
    if (t < 0 || t >= vocab) {
      throw InvalidArgument("speculative generate: prompt token id " + std::to_string(t) +
                            " is outside the vocabulary [0, " + std::to_string(vocab) + ")");
    }
  }
  options.sampling.validate();
}

/// Appends `tokens` to `r` in order, checking plain `generate`'s stop rules (stop token, budget,
/// context) after each one, as if they had been produced one at a time; copies what it
/// appended to `appended`. Returns true when generation must end.
bool append_until_stop(const std::vector<int>& tokens, const GenerateOptions& options,
                       int context, GenerateResult& r, std::vector<int>& appended) {
  for (int token : tokens) {
    const int pos = int(r.tokens.size());
    r.tokens.push_back(token);
    appended.push_back(token);
    if (options.on_token) options.on_token(token);
    if (std::find(options.stop_tokens.begin(), options.stop_tokens.end(), token) !=
        options.stop_tokens.end()) {
      r.stop = StopReason::kStopToken;
      return true;
    }
    if (r.generated() == options.max_new_tokens) {
      r.stop = StopReason::kMaxTokens;
      return true;
    }
    if (pos + 1 >= context) {  // no position left to feed this token back at
      r.stop = StopReason::kContext;
      return true;
    }
  }
  return false;
}

}  // namespace

SpecResult SpecDecoder::generate(const std::vector<int>& prompt, const GenerateOptions& options) {
  const int context = target_.max_seq_len();
  const int vocab = target_.vocab_size();
  check_request(prompt, options, vocab, context);

  SpecResult out;
  GenerateResult& r = out.generation;
  SpecStats& s = out.stats;
  r.tokens = prompt;
  r.prompt_tokens = int(prompt.size());
  if (options.max_new_tokens == 0) return out;

  target_.reset();
  // Prefill all but the last prompt token: every round then starts by feeding the last
  // accepted token, so the target's KV always holds positions 0 .. L-2.
  auto t0 = Clock::now();
  if (prompt.size() > 1) {
    // Last-row logits only (discarded): a kernel backend then skips the classifier on the
    // other prompt rows.
    target_.forward(std::vector<int>(prompt.begin(), prompt.end() - 1), 0);
  }
  s.prefill_seconds = seconds_since(t0);
  t0 = Clock::now();
  proposer_.begin(prompt);
  s.draft_prefill_seconds = seconds_since(t0);
  const int64_t draft_forwards_before = proposer_.forwards();

  int gamma = options_.gamma;
  bool done = false;
  const auto decode_start = Clock::now();
  while (!done) {
    const int L = int(r.tokens.size());
    const int left = options.max_new_tokens - r.generated();
    SpecRound round;
    round.first_position = L;
    round.gamma = std::max(0, std::min({gamma, left - 1, context - 1 - L}));

    t0 = Clock::now();
    Proposal proposal;
    if (round.gamma > 0) proposal = proposer_.propose(r.tokens, round.gamma, options.sampling);
    s.draft_seconds += seconds_since(t0);
    round.proposed = int(proposal.tokens.size());
    if (round.proposed > round.gamma) {
      throw InvalidArgument("speculative generate: proposer '" + proposer_.name() +
                            "' returned " + std::to_string(round.proposed) +
                            " tokens for gamma " + std::to_string(round.gamma));
    }

    std::vector<int> feed{r.tokens.back()};  // (k + 1) verified in one forward
    feed.insert(feed.end(), proposal.tokens.begin(), proposal.tokens.end());
    t0 = Clock::now();
    const std::vector<float> logits = target_.forward_all(feed, L - 1);  // (k + 1, vocab)
    s.target_seconds += seconds_since(t0);

    const VerifyResult v = verify_proposal(logits, vocab, proposal, options.sampling, L);
    round.accepted = v.accepted;
    ++s.rounds;
    s.proposed += round.proposed;
    if (s.rounds_offering.size() <= std::size_t(round.proposed)) {
      s.rounds_offering.resize(std::size_t(round.proposed) + 1, 0);
    }
    ++s.rounds_offering[std::size_t(round.proposed)];
    s.accepted += v.accepted;
    if (v.accepted < round.proposed) ++s.rejected;
    // BEGIN EXERCISE ch06.2 "Rollback: drop the KV of rejected drafts" points=15 minutes=20
    // HINT: The verify pass wrote KV for t_{L-1} and all k drafts; keep t_{L-1} and the
    // HINT: accepted drafts only (positions 0 .. L - 1 + accepted) with target_.truncate.
    // STUB:
    target_.truncate(L + v.accepted);  // KV of t_{L-1} and the kept drafts
    // END EXERCISE

    done = append_until_stop(v.tokens, options, context, r, round.appended);
    // A stop token among the kept drafts: forget the KV of the drafts after it too.
    // BEGIN EXERCISE ch06.2 "Rollback: drop the KV of rejected drafts"
    // HINT: A stop token among the kept drafts ends generation early: the KV must not hold
    // HINT: positions past the last kept token's predecessor either.
    // STUB:
    target_.truncate(std::min(target_.length(), int(r.tokens.size()) - 1));
    // END EXERCISE
    if (options_.on_round) options_.on_round(round);

    if (options_.adaptive && round.proposed > 0) {
      gamma = v.accepted == round.proposed ? std::min(gamma + 2, options_.max_gamma)
                                           : std::max(gamma - 1, 1);
    }
  }
  s.decode_seconds = seconds_since(decode_start);
  s.generated = r.generated();
  s.draft_forwards = proposer_.forwards() - draft_forwards_before;
  r.prefill_seconds = s.total_prefill_seconds();
  r.decode_seconds = s.decode_seconds;
  return out;
}

}  // namespace nanoserve::speculative
