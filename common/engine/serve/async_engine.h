#pragma once
/// \file
/// \brief `AsyncEngine`: the engine on a thread of its own, for a server (chapter 8; vLLM's
/// `AsyncLLM` over its `EngineCore`). The scheduler and the executor stay single-threaded: only
/// the engine thread touches them. Other threads talk to it through two doors — a submission
/// queue (with cancellations) and one `RequestStream` per request — and read a `EngineSnapshot`
/// of its state.
///
///     HTTP threads                    engine thread (owns Scheduler + Executor)
///     ────────────                    ─────────────────────────────────────────
///     submit(Request) ──► inbox ──┐   loop: take inbox → add_request / cancel
///     cancel(id)      ──► inbox ──┘         schedule() → execute() → update()
///                                           publish each sampled token ─┐
///     RequestStream::next() ◄── tokens, logprobs, finish ◄──────────────┘
///     snapshot()            ◄── queues, block owners, counters (after each step)
///
/// A request is never dropped silently: every submitted request's stream ends with a finish
/// (stop, length, cancelled, rejected, or cancelled by `drain`'s deadline with the detail
/// saying so). The engine thread never waits for a reader; a slow reader only makes its own
/// stream's pending tokens pile up.
///
/// Parallel sampling (`n` > 1) is chapter 7's: `submit(request, n)` queues one request whose
/// prompt is computed once; when it is done the scheduler forks samples 1 … n − 1 from it
/// copy-on-write (its KV blocks shared), with seeds seed + 1, …, seed + n − 1, and each sample
/// streams to its own `RequestStream`. The group runs and is preempted together; its streams
/// finish when its last sample does (the scheduler hands a group out whole), and cancelling
/// one sample cancels the group. A group needs n running sequences: n > `max_num_seqs` is
/// rejected.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/engine/serve/executor.h"
#include "common/engine/serve/request.h"
#include "common/engine/serve/scheduler.h"
#include "common/sampling/logprobs.h"

namespace nanoserve::engine {

/// \brief Why `AsyncEngine::submit` refused a request: its waiting queue is full
/// (`closed` false: try again later) or it no longer accepts work (`closed` true: draining or
/// stopped).
///
/// \par Example
/// \snippet tests/ch08/test_examples_async.cpp AsyncEngine
class EngineBusy : public std::runtime_error {
 public:
  /// \brief `what` says why; `closed` whether the engine stopped accepting for good.
  EngineBusy(const std::string& what, bool closed) : std::runtime_error(what), closed_(closed) {}
  /// \brief True when the engine drains or stopped; false when only the queue is full.
  bool closed() const { return closed_; }

 private:
  bool closed_;
};

/// \brief What a request's reader gets from one `RequestStream::next`: the tokens sampled
/// since the last call and, once, the end.
///
/// \par Example
/// \snippet tests/ch08/test_examples_async.cpp AsyncEngine
struct StreamDelta {
  std::vector<int> tokens;  ///< new tokens, in order (stop tokens included)
  /// \brief Their log-probabilities when the request asked (`Request::num_logprobs` >= 0).
  std::vector<TokenLogprobs> logprobs;
  bool finished = false;                     ///< the request is over; no more calls needed
  FinishReason finish_reason = FinishReason::kNone;  ///< set with `finished`
  std::string finish_detail;                 ///< e.g. "stop string \"\\n\"", the rejection reason
  std::string output_text;  ///< with `finished`: the engine's text when stop strings ran (cut)
  int num_prefix_hit_tokens = 0;  ///< with `finished`: prompt tokens from the prefix cache
  int num_preemptions = 0;        ///< with `finished`: times it was preempted
};

/// \brief One request's tokens as the engine produces them; read by one thread.
///
/// \par Example
/// \snippet tests/ch08/test_examples_async.cpp AsyncEngine
class RequestStream {
 public:
  /// \brief The request's id (for `AsyncEngine::cancel`).
  int64_t id() const { return id_; }
  /// \brief Waits up to `timeout` for news. Returns true with `out` holding the tokens since
  /// the last call (and the finish, once); false when nothing came in time (or after the
  /// finish was taken).
  bool next(StreamDelta& out, std::chrono::milliseconds timeout);

 private:
  friend class AsyncEngine;
  explicit RequestStream(int64_t id) : id_(id) {}
  void push(int token, const TokenLogprobs* logprobs);
  void finish(const Request& r);

  int64_t id_;
  std::mutex mu_;
  std::condition_variable cv_;
  StreamDelta pending_;
  bool has_news_ = false;
  bool taken_finish_ = false;
};

/// \brief One request as the live view shows it.
///
/// \par Example
/// \snippet tests/ch08/test_examples_async.cpp AsyncEngine
struct EngineRequestView {
  int64_t id = 0;               ///< request id
  std::string status;           ///< "waiting", "running", "preempted"
  int prompt_len = 0;           ///< prompt tokens
  int num_computed_tokens = 0;  ///< tokens whose KV is computed (prefill progress)
  int num_output_tokens = 0;    ///< generated so far
  int max_tokens = 0;           ///< its limit
  int num_prefix_hit_tokens = 0;  ///< prompt tokens from the prefix cache
  int num_preemptions = 0;        ///< times preempted
  std::vector<int> block_ids;     ///< its block table (running requests)
};

/// \brief The engine's state after a step: what /metrics and the live view read.
///
/// \par Example
/// \snippet tests/ch08/test_examples_async.cpp AsyncEngine
struct EngineSnapshot {
  long long step = 0;            ///< steps run
  double step_ms = 0;            ///< wall time of the last step (schedule + execute + update)
  double step_seconds_total = 0;  ///< wall time of all steps so far (the engine's own work)
  /// \brief CPU time of the engine thread so far: its steps, and the publishing and
  /// bookkeeping around them (what a server adds runs on other threads).
  double engine_cpu_seconds = 0;
  int batch_size = 0;            ///< sequences in the last step
  int num_batched_tokens = 0;    ///< rows of the last step
  int num_running = 0;           ///< requests holding KV blocks
  int num_waiting = 0;           ///< requests queued (submitted, not yet admitted included)
  long long num_generated_tokens = 0;  ///< tokens sampled since start
  /// \brief Prompt tokens of requests submitted since start (once per request: its samples
  /// share the prompt).
  long long num_prompt_tokens = 0;
  SchedulerStats stats;          ///< the scheduler's counters
  KVCacheMetrics kv;             ///< the KV manager's counters
  int num_kv_blocks = 0;         ///< blocks in the pool
  int block_size = 0;            ///< tokens per block
  bool accepting = true;         ///< false while draining or stopped
  std::string error;             ///< set when the engine thread failed (it stops)
  /// @name Filled only while someone watches (`AsyncEngine::snapshot(true)` within 2 s)
  /// @{
  std::vector<EngineRequestView> requests;  ///< running (admission order), then waiting
  std::vector<int> block_ref_cnt;           ///< (num_kv_blocks) ref count of each block
  std::vector<unsigned char> block_cached;  ///< (num_kv_blocks) 1 when in the prefix cache
  /// @}
};

/// \brief Limits of an `AsyncEngine`.
///
/// \par Example
/// \snippet tests/ch08/test_examples_async.cpp AsyncEngine
struct AsyncEngineOptions {
  /// \brief Most requests waiting for admission (submitted and queued); `submit` throws
  /// `EngineBusy` beyond it.
  int max_waiting = 256;
};

/// \brief The engine on its own thread (see the file comment).
///
/// \par Example
/// \snippet tests/ch08/test_examples_async.cpp AsyncEngine
class AsyncEngine {
 public:
  /// \brief Called on the engine thread for every finished request (metrics).
  using FinishedHook = std::function<void(const Request&)>;

  /// \brief A scheduler for `config` over `executor` (sized for it, e.g.
  /// `executor_options_for(config)`), and the engine thread, started at once. `detokenize`
  /// serves stop strings.
  AsyncEngine(const SchedulerConfig& config, std::unique_ptr<Executor> executor,
              Detokenizer detokenize = {}, AsyncEngineOptions options = {});
  /// \brief Cancels what is left and joins the engine thread.
  ~AsyncEngine();
  AsyncEngine(const AsyncEngine&) = delete;
  AsyncEngine& operator=(const AsyncEngine&) = delete;

  /// \brief Queues `request` (its id is assigned here, its `n` set to `n`, `arrival_s` to
  /// now) and returns the streams of its `n` samples (see the file comment), sample 0 (the
  /// request itself) first, then the forks' (`parallel_sample_id`). Throws
  /// `InvalidArgument` for a malformed request (`Request::validate_new`) or n outside
  /// [1, 64], and `EngineBusy` when the queue is full or the engine does not accept work.
  std::vector<std::shared_ptr<RequestStream>> submit(Request request, int n = 1);
  /// \brief Cancels a request (its blocks are freed at the next step; its stream finishes
  /// with kCancelled) — with all its samples, whichever sample's id is given. Unknown or
  /// finished ids are ignored.
  void cancel(int64_t id);

  /// \brief Stops accepting (`submit` throws `EngineBusy` with closed()), lets the queued and
  /// running requests finish, and after `timeout_s` cancels what is left (its streams finish
  /// with the detail "server shutting down"). Returns true when everything finished by itself.
  bool drain(double timeout_s);

  /// \brief The state after the last step. With `watch`, also the per-request and per-block
  /// views, which the engine fills for 2 s after each such call.
  EngineSnapshot snapshot(bool watch = false);
  /// \brief Runs `hook` on the engine thread for every finished request (set it before the
  /// first submit).
  void set_finished_hook(FinishedHook hook) { finished_hook_ = std::move(hook); }
  /// \brief The scheduler's configuration.
  const SchedulerConfig& config() const { return config_; }

 private:
  void run();
  void step();
  std::shared_ptr<RequestStream> stream_of(int64_t id);
  void finish_taken();
  /// finish_one for each, then the streams of samples that were never forked.
  void finish_all(std::vector<Request>& finished);
  void finish_one(Request& r);
  /// Counters and (while watched) views; `out` null when no step ran.
  void fill_snapshot(const SchedulerOutput* out, double step_ms);
  void fail_all(const std::string& why);
  double now() const { return clock_.now(); }

  SchedulerConfig config_;
  std::unique_ptr<Executor> executor_;
  Scheduler scheduler_;  // engine thread only
  AsyncEngineOptions options_;
  WallClock clock_;
  FinishedHook finished_hook_;
  // Engine thread only.
  std::unordered_map<int64_t, int> sent_;  // tokens each stream has been given
  std::unordered_set<int64_t> forced_cancel_;  // cancelled by drain's deadline or the destructor
  std::string forced_detail_;
  long long num_generated_ = 0;

  std::mutex mu_;  // guards everything below
  std::condition_variable cv_;
  std::vector<Request> inbox_;
  std::vector<int64_t> cancels_;
  std::unordered_map<int64_t, std::shared_ptr<RequestStream>> streams_;
  int64_t next_id_ = 0;
  int num_queued_ = 0;  // submitted and not yet admitted (inbox + waiting queue)
  bool accepting_ = true;
  bool stop_ = false;
  bool cancel_all_ = false;
  bool refresh_ = false;  // a watcher wants the views of an idle engine
  std::string cancel_detail_;
  EngineSnapshot snapshot_;
  std::chrono::steady_clock::time_point watch_until_{};

  std::thread thread_;  // last: starts after everything above exists
};

}  // namespace nanoserve::engine
