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
///         │             │         front of the waiting queue: it recomputes its KV;
///         │             │         or SWAPPED: its blocks copied to the host pool, queued
///         │             │         for swap-in, chapter 7)
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
#include "common/speculative/proposer.h"

namespace nanoserve::engine {

/// \brief Most draft tokens one request may have verified per step (`Request::num_speculative_tokens`):
/// beyond a few, α^γ is tiny and the verify rows are wasted (chapter 6).
constexpr int kMaxSpeculativeTokens = 16;

/// \brief Most samples of one prompt (`Request::n`).
constexpr int kMaxParallelSamples = 64;

/// \brief The id of sample `i` (1 .. n−1) of request `parent_id` with `n` > 1: −1 − (64 ·
/// parent_id + i), negative so that it never meets a request's own id (requests have ids
/// >= 0 when they sample in parallel). Sample 0 is the request itself.
inline int64_t parallel_sample_id(int64_t parent_id, int i) {
  return -1 - (int64_t(kMaxParallelSamples) * parent_id + i);
}

/// \brief Where a request is in its life.
enum class RequestStatus {
  kWaiting,    ///< queued, holds no KV blocks
  kRunning,    ///< admitted: holds KV blocks and is scheduled at (almost) every step
  kPreempted,  ///< evicted for memory: queued again (at the front), holds no KV blocks
  kSwapped,    ///< evicted for memory with its KV copied to the host pool (chapter 7)
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

/// \brief "waiting", "running", "preempted", "swapped" or "finished".
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

  /// @name Speculative decoding inside the scheduler (chapter 7)
  /// @{
  int num_speculative_tokens = 0;  ///< γ: most draft tokens verified per step (0: none)
  /// \brief The drafts of its next step — guesses of the tokens after its last one — and the
  /// distributions q they were drawn from (empty q: point masses). Set by
  /// `Scheduler::propose_drafts`, consumed (verified) by the next step that schedules it.
  speculative::Proposal draft;
  long long num_draft_tokens = 0;     ///< drafts verified so far
  long long num_accepted_tokens = 0;  ///< of those, accepted by the rejection rule
  /// @}

  /// @name Parallel sampling (chapter 7)
  /// @{
  int n = 1;  ///< samples of this prompt: n − 1 more (seeds seed + 1 …) forked after its prefill
  int64_t parent_id = -1;  ///< a forked sample: the request it came from; -1 otherwise
  int sample_index = 0;    ///< which sample of its group it is (0: the request itself)
  /// \brief The id of its group: `parent_id` for a forked sample, else its own id.
  int64_t group_id() const { return parent_id >= 0 ? parent_id : id(); }
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
  /// >= 1, valid sampling parameters, status kWaiting, γ in [0, kMaxSpeculativeTokens], no
  /// drafts yet, n in [1, kMaxParallelSamples] (and a non-negative id when n > 1), and not a
  /// forked sample.
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
