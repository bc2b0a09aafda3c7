#include "common/engine/serve/request.h"

#include <algorithm>
#include <utility>

#include "common/error.h"

namespace nanoserve::engine {

const char* to_string(RequestStatus status) {
  switch (status) {
    case RequestStatus::kWaiting: return "waiting";
    case RequestStatus::kRunning: return "running";
    case RequestStatus::kPreempted: return "preempted";
    case RequestStatus::kSwapped: return "swapped";
    case RequestStatus::kFinished: return "finished";
  }
  return "?";
}

const char* to_string(FinishReason reason) {
  switch (reason) {
    case FinishReason::kNone: return "none";
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kCancelled: return "cancelled";
    case FinishReason::kRejected: return "rejected";
  }
  return "?";
}

void Request::validate_new() const {
  const std::string name = "request " + std::to_string(id()) + ": ";
  if (prompt_len < 1 || prompt_len != seq.num_tokens()) {
    throw InvalidArgument(name + "prompt_len = " + std::to_string(prompt_len) +
                          " must be >= 1 and equal the " + std::to_string(seq.num_tokens()) +
                          " tokens of the sequence");
  }
  if (seq.num_computed_tokens != 0) {
    throw InvalidArgument(name + "num_computed_tokens = " +
                          std::to_string(seq.num_computed_tokens) + " must be 0 for a new request");
  }
  if (max_tokens < 1) {
    throw InvalidArgument(name + "max_tokens = " + std::to_string(max_tokens) + " must be >= 1");
  }
  if (status != RequestStatus::kWaiting) {
    throw InvalidArgument(name + "status is " + to_string(status) + ", not waiting");
  }
  for (const std::string& s : stop_strings) {
    if (s.empty()) throw InvalidArgument(name + "stop_strings holds an empty string");
  }
  if (num_speculative_tokens < 0 || num_speculative_tokens > kMaxSpeculativeTokens) {
    throw InvalidArgument(name + "num_speculative_tokens = " +
                          std::to_string(num_speculative_tokens) + " is outside [0, " +
                          std::to_string(kMaxSpeculativeTokens) + "]");
  }
  if (!draft.tokens.empty() || !draft.q.empty()) {
    throw InvalidArgument(name + "a new request carries no draft tokens");
  }
  if (n < 1 || n > kMaxParallelSamples) {
    throw InvalidArgument(name + "n = " + std::to_string(n) + " samples is outside [1, " +
                          std::to_string(kMaxParallelSamples) + "]");
  }
  if (n > 1 && id() < 0) {
    throw InvalidArgument(name + "a request with n > 1 needs an id >= 0 (its samples' ids are " +
                          "negative)");
  }
  if (parent_id >= 0 || sample_index != 0) {
    throw InvalidArgument(name + "parent_id and sample_index belong to forked samples, which " +
                          "the scheduler makes");
  }
  seq.sampling.validate();
}

Request make_request(int64_t id, std::vector<int> prompt, int max_tokens,
                     const SamplingParams& sampling, double arrival_s) {
  Request r;
  r.seq.seq_id = id;
  r.prompt_len = static_cast<int>(prompt.size());
  r.seq.token_ids = std::move(prompt);
  r.seq.sampling = sampling;
  r.max_tokens = max_tokens;
  r.arrival_s = arrival_s;
  return r;
}

void finish_request(Request& r, FinishReason reason, std::string detail, double now_s) {
  r.status = RequestStatus::kFinished;
  r.finish_reason = reason;
  r.finish_detail = std::move(detail);
  r.finished_s = now_s;
}

namespace {

/// Appends the text of `token` to `r.output_text`; returns the stop string found in the new
/// tail (and cuts the text before it), or nullptr.
const std::string* match_stop_string(Request& r, int token, const Detokenizer& detokenize) {
  if (!detokenize) {
    throw InvalidArgument("request " + std::to_string(r.id()) +
                          " has stop strings but the engine has no detokenizer");
  }
  const int prev = r.seq.token_ids[r.seq.token_ids.size() - 2];
  const size_t old_size = r.output_text.size();
  r.output_text += detokenize(prev, token);
  // Only a match that ends in the new piece is new: start max_len - 1 bytes before it.
  size_t longest = 0;
  for (const std::string& s : r.stop_strings) longest = std::max(longest, s.size());
  const size_t from = old_size >= longest - 1 ? old_size - (longest - 1) : 0;
  size_t best = std::string::npos;
  const std::string* found = nullptr;
  for (const std::string& s : r.stop_strings) {
    const size_t at = r.output_text.find(s, from);
    if (at < best) {
      best = at;
      found = &s;
    }
  }
  if (found != nullptr) r.output_text.resize(best);
  return found;
}

}  // namespace

bool append_token(Request& r, int token, double now_s, int max_model_len,
                  const Detokenizer& detokenize) {
  r.seq.token_ids.push_back(token);
  r.token_times_s.push_back(now_s);
  if (std::find(r.stop_token_ids.begin(), r.stop_token_ids.end(), token) !=
      r.stop_token_ids.end()) {
    finish_request(r, FinishReason::kStop, "stop token " + std::to_string(token), now_s);
    return true;
  }
  if (!r.stop_strings.empty()) {
    if (const std::string* s = match_stop_string(r, token, detokenize)) {
      finish_request(r, FinishReason::kStop, "stop string \"" + *s + "\"", now_s);
      return true;
    }
  }
  if (r.num_output_tokens() >= r.max_tokens) {
    finish_request(r, FinishReason::kLength, "max_tokens " + std::to_string(r.max_tokens), now_s);
    return true;
  }
  // max_model_len bounds prompt + output, as in vLLM and `generate` (a prompt of exactly
  // max_model_len tokens still gets its one token: the sampled token is never fed back).
  if (r.seq.num_tokens() >= max_model_len) {
    finish_request(r, FinishReason::kLength,
                   "context of " + std::to_string(max_model_len) + " tokens", now_s);
    return true;
  }
  return false;
}

}  // namespace nanoserve::engine
