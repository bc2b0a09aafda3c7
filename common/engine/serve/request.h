#pragma once
/// \file
/// \brief `Request`: a `Sequence` plus everything a serving loop tracks about it — its limits
/// and stop rules, where it is in its life, why it finished, and when each of its tokens
/// appeared (chapters 3 and 4; vLLM's `Request`).
///
/// Life of a request under the continuous-batching scheduler:
///
///     add_request ──► WAITING ──admitted──► RUNNING ──stop rule──► FINISHED (stop | length)
///         │             ▲  ▲                  │  │
///         │             │  └──── PREEMPTED ◄──┘  └──cancel──────► FINISHED (cancelled)
///         │             │        (blocks freed, num_computed_tokens = 0, requeued at the
///         │             │         front of the waiting queue: it recomputes its KV)
///         └─────────────┴── can never fit ──────────────────────► FINISHED (rejected)
///
/// The rules that end a request are checked after every sampled token, in this order (the
/// order of `generate`): a stop token id (EOS included), a stop string, `max_tokens`, the
/// context length.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/engine/kv/sequence.h"

namespace nanoserve::engine {

/// \brief Where a request is in its life.
enum class RequestStatus {
  kWaiting,    ///< queued, holds no KV blocks
  kRunning,    ///< admitted: holds KV blocks and is scheduled at (almost) every step
  kPreempted,  ///< evicted for memory: queued again (at the front), holds no KV blocks
  kFinished,   ///< done; `finish_reason` says why
};

/// \brief Why a request finished (the OpenAI API's `finish_reason`, plus two outcomes that
/// never produced a normal end).
enum class FinishReason {
  kNone,       ///< not finished
  kStop,       ///< a stop token (EOS) or a stop string
  kLength,     ///< `max_tokens`, the context length, or the KV pool's capacity
  kCancelled,  ///< `cancel` was called
  kRejected,   ///< it can never run (prompt longer than the context or the KV pool)
};

/// \brief "waiting", "running", "preempted" or "finished".
const char* to_string(RequestStatus status);
/// \brief "none", "stop", "length", "cancelled" or "rejected".
const char* to_string(FinishReason reason);

/// \brief Turns a generated token into text, given the token before it (the signature of
/// `Tokenizer::decode_token`). Needed only by requests with stop strings.
using Detokenizer = std::function<std::string(int prev_token, int token)>;

/// \brief One request: its tokens (in `seq`), its limits, and its history.
///
/// \par Example
/// \snippet tests/ch04/test_examples_serve.cpp Request
struct Request {
  /// @name What was asked
  /// @{
  Sequence seq;                           ///< id, tokens (prompt first), progress, sampling
  int prompt_len = 0;                     ///< how many of `seq.token_ids` are the prompt
  int max_tokens = 16;                    ///< at most this many generated tokens (>= 1)
  std::vector<int> stop_token_ids;        ///< ids that end generation (kept in the output)
  std::vector<std::string> stop_strings;  ///< texts that end generation (cut from the text)
  double arrival_s = 0;                   ///< when the request arrived (the clock's seconds)
  /// \brief Log-probabilities wanted with each sampled token (`Executor::take_logprobs`):
  /// -1 none; k >= 0 the token's own and the k most likely tokens' (the OpenAI API's
  /// `logprobs` / `top_logprobs`).
  int num_logprobs = -1;
  /// @}

  /// @name Where it is
  /// @{
  RequestStatus status = RequestStatus::kWaiting;  ///< see the diagram above
  FinishReason finish_reason = FinishReason::kNone;  ///< set when status becomes kFinished
  std::string finish_detail;  ///< e.g. "stop token 2", "max_tokens 16", the rejection reason
  std::string output_text;    ///< generated text when a detokenizer ran (stop strings)
  /// @}

  /// @name History, for metrics
  /// @{
  double first_scheduled_s = -1;      ///< first time it was scheduled (-1: never)
  std::vector<double> token_times_s;  ///< (num_output_tokens) when each token was sampled
  double finished_s = -1;             ///< when it finished (-1: not yet)
  int num_preemptions = 0;            ///< times it was preempted
  int num_prefix_hit_tokens = 0;      ///< prompt tokens taken from the prefix cache at admission
  /// @}

  /// \brief The request's id (`seq.seq_id`).
  int64_t id() const { return seq.seq_id; }
  /// \brief Generated tokens so far.
  int num_output_tokens() const { return seq.num_tokens() - prompt_len; }
  /// \brief The generated tokens (a copy).
  std::vector<int> output_tokens() const {
    return std::vector<int>(seq.token_ids.begin() + prompt_len, seq.token_ids.end());
  }
  /// \brief Whether status is kFinished.
  bool finished() const { return status == RequestStatus::kFinished; }

  /// \brief Throws `InvalidArgument` naming the request and field unless it is a fresh
  /// request: a non-empty prompt equal to `seq.token_ids`, nothing computed, `max_tokens`
  /// >= 1, valid sampling parameters, status kWaiting.
  void validate_new() const;
};

/// \brief A new request with prompt `prompt` (id `id`, arriving at `arrival_s`). The other
/// fields keep their defaults.
Request make_request(int64_t id, std::vector<int> prompt, int max_tokens,
                     const SamplingParams& sampling = {}, double arrival_s = 0);

/// \brief Marks `r` finished at `now_s` with `reason` and `detail`.
void finish_request(Request& r, FinishReason reason, std::string detail, double now_s);

/// \brief Appends a sampled token to `r`, records its time and applies the stop rules (see
/// the file comment) with a context of `max_model_len` positions. Returns true when `r`
/// finished. Stop strings are matched on the text `detokenize` produces, which must be
/// callable when `r.stop_strings` is not empty; the text is cut before the match.
bool append_token(Request& r, int token, double now_s, int max_model_len,
                  const Detokenizer& detokenize);

}  // namespace nanoserve::engine
