#pragma once
/// \file
/// \brief `Scheduler`: iteration-level (continuous) batching with chunked prefill and
/// preemption by recomputation (chapter 4; Orca's iteration-level scheduling, Yu et al. OSDI
/// 2022; vLLM v1's scheduler; Sarathi-Serve's chunked prefill, Agrawal et al. OSDI 2024).
///
/// There is no prefill phase and no decode phase. Every request just has tokens whose KV is
/// not computed yet — `num_computed_tokens` catching up with `num_tokens` — and each step
/// gives out a budget of `max_num_batched_tokens` rows:
///
///     step k:  budget 8                   running (admission order)        waiting
///              ┌─────────────────────┐    A: decode        1 token         D (prompt 9)
///              │A│B│C C C C C C│D ...│    B: decode        1 token         E
///              └─────────────────────┘    C: prompt chunk  6 of 20 tokens
///                 running first, in order, then waiting ones while budget,
///                 max_num_seqs and KV blocks allow (here D gets nothing: budget spent)
///
/// Rules, in the order `schedule()` applies them:
///  1. Running requests first, in admission order: each gets min(tokens left, budget left).
///     A request that needs a KV block when none is free preempts the most recently admitted
///     running request (possibly itself): its blocks are freed, its num_computed_tokens reset,
///     and it goes back to the FRONT of the waiting queue, to recompute its KV later.
///  2. Then, unless someone was preempted in this step, waiting requests in FCFS order: the
///     head is admitted only if `max_num_seqs`, the budget and the KV blocks for its first
///     chunk (after prefix-cache hits) allow; otherwise admission stops (no overtaking).
///  3. Chunked prefill off: a prompt is admitted only when all of it fits the budget left.
///     To make that always possible the config requires max_num_batched_tokens >=
///     max_model_len (a longer prompt is rejected as longer than the context), as vLLM does.
///  4. A request that can never run is rejected when it is added (finish reason kRejected and
///     the reason in finish_detail): a prompt longer than max_model_len, or one that needs
///     more KV blocks than the whole pool. A request that outgrows the whole pool (it needs
///     more blocks while no other request holds any) finishes with kLength and the detail
///     "KV cache capacity: …" — the same tokens it would produce running alone.
///
///  5. Speculative decoding (chapter 7): a decoding request may carry draft tokens
///     (`Request::draft`, set by `propose_drafts` between steps). It is then scheduled with
///     1 + k rows, its last token and k drafts; the drafts count against the token budget
///     (k is cut to fit what is left of it) and need KV slots like any token, but never cost
///     a preemption: when their blocks are not free the request runs without them. `update`
///     keeps the accepted drafts, appends the token after them and rolls the rejected rows'
///     slots back through the block manager (`KVCacheManager::accept_drafts`).
///  6. Parallel sampling (chapter 7): a request with n > 1 runs as a group. It is admitted
///     only with room for all n sequences under max_num_seqs; when its prompt is done, the
///     step forks n − 1 samples from it (`KVCacheManager::fork`: its blocks shared, the
///     partial last one copied on first write), whose first tokens come from the same row
///     with their own seeds. The group is preempted as one (the newest group first), and
///     handed out by `take_finished` when its last sample finishes (each sample's blocks are
///     freed when it finishes). A group preempted by recomputation is admitted again as one:
///     every sample at once, with room for all of them.
///  7. Swap preemption (chapter 7): with `PreemptionMode::kSwap` (or kAuto for a group of
///     samples, vLLM v0's rule) a victim's blocks are copied to the host pool
///     (`SchedulerOutput::blocks_to_swap_out`, before the pass) instead of dropped, and it
///     waits in the swapped queue with its num_computed_tokens kept; when the host pool is
///     full it is recomputed instead. After the running requests, unless this step preempted,
///     swapped requests come back first, oldest first (`blocks_to_swap_in`), each with room
///     for its next row; waiting requests are admitted only when none is swapped out (they
///     arrived later: FCFS across both queues).
///
/// Contract with the executor (from `KVCacheManager`): every slot in a `SchedulerOutput` is
/// written by the forward pass of that output, each layer's new K/V before that layer's
/// attention reads, and every block copy is done before the pass.

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/engine/kv/kv_cache_manager.h"
#include "common/engine/serve/drafter.h"
#include "common/engine/serve/request.h"
#include "common/engine/serve/scheduler_output.h"

namespace nanoserve::engine {

/// \brief How a running request gives its KV blocks back when the pool runs out (chapter 7;
/// vLLM v0's `preemption_mode`).
enum class PreemptionMode {
  kRecompute,  ///< free its blocks; recompute its KV from its tokens when admitted again
  kSwap,       ///< copy its blocks to the host pool, copy them back later (recompute when
               ///< the host pool is full)
  /// \brief vLLM v0's default: swap a request with several running samples (recomputing
  /// them would prefill each sample), recompute a single sequence (cheap, no host copy).
  kAuto,
};

/// \brief "recompute", "swap" or "auto".
const char* to_string(PreemptionMode mode);
/// \brief Parses "recompute", "swap" or "auto"; throws `InvalidArgument` naming the text.
PreemptionMode parse_preemption_mode(const std::string& text);

/// \brief Limits of a `Scheduler` and the KV pool it manages.
///
/// \par Example
/// \snippet tests/ch04/test_examples_serve.cpp Scheduler
struct SchedulerConfig {
  int max_num_seqs = 64;             ///< most running requests at once
  int max_num_batched_tokens = 512;  ///< most rows (new tokens) per forward pass
  int max_model_len = 256;           ///< most tokens (prompt + output) of one request
  bool enable_chunked_prefill = true;  ///< split long prompts over several steps
  int num_kv_blocks = 1024;          ///< physical blocks in the KV pool
  int block_size = 16;               ///< tokens per block
  bool enable_prefix_caching = true;  ///< reuse cached full blocks across requests
  /// \brief Recompute (chapter 4) or swap preempted requests (chapter 7, rule 7).
  PreemptionMode preemption_mode = PreemptionMode::kRecompute;
  int num_host_blocks = 0;  ///< blocks of the host pool swapped-out KV waits in

  /// \brief Throws `InvalidArgument` naming the field for non-positive sizes, a negative host
  /// pool, swap preemption without one, and when chunked prefill is off but
  /// max_num_batched_tokens < max_model_len (rule 3).
  void validate() const;
};

/// \brief Counters of a `Scheduler`.
///
/// \par Example
/// \snippet tests/ch04/test_examples_serve.cpp Scheduler
struct SchedulerStats {
  long long num_steps = 0;        ///< schedule() calls that scheduled something
  long long num_preemptions = 0;  ///< preemptions (a request preempted twice counts twice)
  long long num_rejected = 0;     ///< requests rejected at add_request
  long long num_cancelled = 0;    ///< requests cancelled
  long long num_finished = 0;     ///< requests finished (any reason)
  long long num_scheduled_tokens = 0;  ///< rows computed, summed over steps
  long long num_swap_outs = 0;         ///< preemptions by swapping (of a request each)
  long long num_swap_ins = 0;          ///< requests swapped back in
  long long num_draft_tokens = 0;      ///< draft rows verified (speculative decoding)
  long long num_accepted_tokens = 0;   ///< of those, accepted by the rejection rule
};

/// \brief The continuous-batching scheduler. Owns the KV cache manager and the requests until
/// they finish. Single-threaded: schedule() → (execute) → update(), repeated.
///
/// \par Example
/// \snippet tests/ch04/test_examples_serve.cpp Scheduler
class Scheduler {
 public:
  /// \brief Validates `config` and builds the KV pool. `detokenize` is needed only for stop
  /// strings.
  explicit Scheduler(const SchedulerConfig& config, Detokenizer detokenize = {});

  /// \brief Queues a request at the back of the waiting queue, or rejects it (rule 4; it is
  /// then finished at once and returned by `take_finished`). Throws `InvalidArgument` for a
  /// malformed request (`Request::validate_new`), a duplicate id, or stop strings without a
  /// detokenizer.
  void add_request(Request request);

  /// \brief Plans the next forward pass (rules 1–3). Reserves the KV slots of every scheduled
  /// token; `now_s` is recorded as the first-scheduled time of newly admitted requests. Throws
  /// `std::logic_error` if called again before `update`.
  SchedulerOutput schedule(double now_s = 0);

  /// \brief Applies a finished forward pass: advances each scheduled request's
  /// num_computed_tokens, appends `sampled` (`num_sampled_tokens()` entries per sampling
  /// sequence of `output`, in order; see scheduler_output.h) with time `now_s`, applies stop
  /// rules, rolls back the slots of rejected drafts, frees finished requests' blocks, and
  /// finishes requests cancelled during the step. Throws `InvalidArgument` if `sampled` has
  /// the wrong size or a verification's entries are not accepted drafts, one token and -1
  /// padding; returns the ids finished in this update.
  std::vector<int64_t> update(const SchedulerOutput& output, const std::vector<int>& sampled,
                              double now_s = 0);

  /// \brief Speculative decoding: asks `drafter` for the drafts of every running request that
  /// speculates (`num_speculative_tokens` > 0), has computed all its tokens but the last and
  /// holds no drafts yet, with γ' = min(γ, tokens left − 1, max_model_len − 1 − tokens) (so
  /// the bonus token fits the budget and the context); requests with γ' < 1 are skipped. Call
  /// between `update` and `schedule`. Throws `InvalidArgument` for a proposal longer than γ',
  /// with q rows that do not match its tokens, or a token outside the drafter's vocabulary.
  void propose_drafts(Drafter& drafter);

  /// \brief Cancels a waiting or running request (finish reason kCancelled, blocks freed),
  /// with all its parallel samples. During a step (between schedule and update) it takes
  /// effect in `update`. Returns false when the id is unknown or already finished.
  bool cancel(int64_t id, double now_s = 0);

  /// \brief Whether any request is waiting or running.
  bool has_unfinished() const {
    return !waiting_.empty() || !running_.empty() || !swapped_.empty();
  }
  /// \brief Requests swapped out to the host pool.
  int num_swapped() const { return static_cast<int>(swapped_.size()); }
  /// \brief Ids of the swapped queue, front (next to come back) first.
  std::vector<int64_t> swapped_ids() const;
  /// \brief Requests in the waiting queue (preempted ones included).
  int num_waiting() const { return static_cast<int>(waiting_.size()); }
  /// \brief Requests admitted and holding KV blocks.
  int num_running() const { return static_cast<int>(running_.size()); }
  /// \brief Ids of the waiting queue, front first.
  std::vector<int64_t> waiting_ids() const;
  /// \brief Ids of the running requests in admission order.
  std::vector<int64_t> running_ids() const;
  /// \brief A live (waiting or running) request. Throws `InvalidArgument` for other ids.
  const Request& request(int64_t id) const;
  /// \brief A live request, or a parallel sample that finished while others of its group
  /// run on (it is handed out by `take_finished` with its group); null for other ids.
  const Request* find(int64_t id) const;
  /// \brief Moves out the requests finished since the last call, in finishing order.
  std::vector<Request> take_finished();

  /// @name Disaggregated prefill and decode (chapter 9; scheduler_handoff.cpp)
  /// A prefill instance hands a request off once its prompt is computed and its first token
  /// sampled, keeping the blocks until their KV has been sent; a decode instance adopts it with
  /// fresh blocks that the received KV fills before its next step.
  /// @{

  /// \brief Prefill side: takes the running request `id` — prompt computed, first token sampled,
  /// not finished — out of the scheduler (returned), and keeps its blocks (its table stays in
  /// `kv()`) until `release_handed_off`. Throws `InvalidArgument` for any other request, and
  /// `std::logic_error` during a step.
  Request hand_off(int64_t id);
  /// \brief Frees the blocks of a handed-off request (its KV has been sent). Throws
  /// `InvalidArgument` for an id that was not handed off.
  void release_handed_off(int64_t id);
  /// \brief Handed-off requests whose blocks are still held.
  int num_handed_off() const { return static_cast<int>(handed_off_.size()); }
  /// \brief Decode side: whether `adopt(r)` would find KV blocks and a running slot now.
  bool can_adopt(const Request& r) const;
  /// \brief Decode side: admits `r` — its prompt computed elsewhere, its first token sampled
  /// (`r.seq` holds prompt + that token) — as running, with `num_computed_tokens` = prompt
  /// length and a table of fresh blocks for the prompt (the longest cached prefix reused).
  /// Returns the prompt tokens taken from the prefix cache (a multiple of the block size): the
  /// blocks after them must receive their KV before the next `schedule`. Throws
  /// `InvalidArgument` for a duplicate id or a request not in that state, `BlockPoolExhausted`
  /// (changing nothing) when blocks lack.
  int adopt(Request r);
  /// @}

  /// \brief The counters.
  const SchedulerStats& stats() const { return stats_; }
  /// \brief The configuration.
  const SchedulerConfig& config() const { return config_; }
  /// \brief The KV cache manager (read-only: tables, pool, metrics).
  const KVCacheManager& kv() const { return kv_; }
  /// \brief KV invariants plus: queues hold exactly the live requests with matching statuses,
  /// running requests have tables covering their computed tokens, waiting ones have none,
  /// and at most max_num_seqs run. Returns the first violation or an empty string.
  std::string check_invariants() const;

 private:
  void schedule_running(SchedulerOutput& out, int& budget, double now_s);
  void schedule_waiting(SchedulerOutput& out, int& budget, double now_s);
  /// Swap preemption (scheduler_swap.cpp): swaps r's group out, or returns false when the
  /// mode or the host pool says recompute.
  bool swap_out_group(Request& r, SchedulerOutput& out);
  /// Brings swapped requests back, oldest first, while seats and blocks allow.
  void schedule_swapped(SchedulerOutput& out, int& budget);
  void preempt(Request& victim, SchedulerOutput& out);
  /// Parallel sampling (scheduler_groups.cpp): the live samples of r's group (r alone when it
  /// has none), in sample order.
  std::vector<Request*> members_of(const Request& r) const;
  /// Its group's running samples (contiguous in running_).
  std::vector<Request*> running_members(const Request& r) const;
  static bool same_group(const Request& a, const Request& b) { return a.group_id() == b.group_id(); }
  /// Running sequences plus the samples running requests will fork (admission counts both).
  int num_seats() const;
  /// Preempts r's whole group (its running samples, the back of running_).
  void preempt_group(Request& r, SchedulerOutput& out);
  /// Admits the waiting samples of r's group together, or none; false when they must wait.
  bool admit_group(Request& r, SchedulerOutput& out, int& budget, double now_s);
  /// Forks r's samples when the step just planned finishes its prompt.
  void fork_if_prefilled(Request& r, SchedulerOutput& out);
  /// Puts the samples forked in this step right after their parents in running_.
  void place_forks();
  /// Checks the sampled entries of a verification (drafts kept, one token, -1 padding);
  /// returns how many drafts were accepted.
  static int accepted_drafts(const ScheduledSequence& s, const int* entries);
  /// Frees a finished request's blocks, counts it and moves it to finished_ (callers have
  /// unlinked it from the queues).
  void retire(Request& r);
  std::string rejection_reason(const Request& r) const;
  std::string capacity_detail() const;

  SchedulerConfig config_;
  Detokenizer detokenize_;
  KVCacheManager kv_;
  std::unordered_map<int64_t, std::unique_ptr<Request>> live_;  ///< waiting + running, by id
  std::deque<Request*> waiting_;   ///< FCFS; preempted requests are pushed at the front
  std::deque<Request*> swapped_;   ///< swapped out, oldest first (a group's samples together)
  std::vector<Request*> running_;  ///< admission order: the back is the preemption victim
  std::vector<Request> finished_;  ///< finished since the last take_finished()
  std::vector<int64_t> cancel_pending_;  ///< cancelled during a step, finished in update()
  /// Parallel sampling: one per request with n > 1 until its last sample finishes.
  struct Group {
    int n = 1;                  ///< samples
    bool forked = false;        ///< the samples exist (the prompt was done)
    int live = 1;               ///< samples waiting or running
    std::vector<Request> done;  ///< finished samples, handed out with the last one
  };
  std::unordered_map<int64_t, Group> groups_;  ///< by the request's id
  std::vector<std::pair<Request*, std::vector<Request*>>> forked_;  ///< this step's forks
  std::vector<int64_t> handed_off_;  ///< handed off, blocks still held (chapter 9)
  bool step_in_flight_ = false;
  SchedulerStats stats_;
};

}  // namespace nanoserve::engine
