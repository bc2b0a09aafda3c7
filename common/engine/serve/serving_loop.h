#pragma once
/// \file
/// \brief The serving loop of chapter 4 — arrivals in, schedule → execute → update, finished
/// requests out — and `ServingRun`, the record of a run that both batching policies produce
/// and `serving_metrics.h` summarizes.
///
///     clock ──► requests whose arrival_s has come ──► Scheduler::add_request
///       ▲                                                     │
///       │ the executor's pass takes time            schedule() → SchedulerOutput
///       │                                                     │
///       └────── update(tokens, now) ◄──── Executor::execute ◄─┘
///
/// When nothing is waiting or running, the loop idles until the next arrival. With a
/// `Drafter` (speculative decoding, chapter 7), each update is followed by
/// `Scheduler::propose_drafts`, so the next step verifies the drafts.

#include <vector>

#include "common/engine/serve/executor.h"
#include "common/engine/kv/kv_cache_manager.h"
#include "common/engine/serve/request.h"
#include "common/engine/serve/scheduler.h"

namespace nanoserve::engine {

/// \brief The state of the engine after one forward pass (KV usage over time, queue lengths).
///
/// \par Example
/// \snippet tests/ch04/test_examples_serve.cpp ServingRun
struct StepSample {
  double time_s = 0;           ///< when the pass finished
  int num_running = 0;         ///< requests holding KV blocks during the pass
  int num_waiting = 0;         ///< requests queued during the pass
  int num_scheduled = 0;       ///< sequences in the pass
  int num_batched_tokens = 0;  ///< useful rows computed (draft rows included)
  int num_draft_rows = 0;      ///< of those, draft tokens verified (speculative decoding)
  int num_wasted_rows = 0;     ///< padding / idle rows computed (static batching)
  int kv_blocks_used = 0;      ///< blocks with ref_cnt > 0 during the pass
  /// \brief Slots of those blocks that hold (or are reserved for) a token: kv_slots_used /
  /// (kv_blocks_used · block_size) is how much of the reserved KV memory is used.
  long long kv_slots_used = 0;
  int num_preempted = 0;       ///< requests preempted while planning the pass
  int host_blocks_used = 0;    ///< host-pool blocks holding swapped-out KV (chapter 7)
};

/// \brief Where the rows of a static batch went (chapter 3). All zero for continuous runs.
///
/// \par Example
/// \snippet tests/ch03/test_examples_static.cpp StaticBatchConfig
struct BatchWaste {
  long long useful_rows = 0;   ///< rows of real tokens (prompt rows not cached, decode rows)
  long long padding_rows = 0;  ///< rows that pad shorter prompts to the longest one
  long long idle_rows = 0;     ///< decode rows of members that had already finished
  /// \brief (padding + idle) / all rows computed; 0 when nothing ran.
  double waste_fraction() const {
    const long long all = useful_rows + padding_rows + idle_rows;
    return all == 0 ? 0.0 : double(padding_rows + idle_rows) / double(all);
  }
};

/// \brief Everything a run produced: the finished requests with their histories, one sample
/// per forward pass, and counters.
///
/// \par Example
/// \snippet tests/ch04/test_examples_serve.cpp ServingRun
struct ServingRun {
  std::vector<Request> requests;   ///< every request of the workload, finished, by id
  std::vector<StepSample> steps;   ///< one per forward pass, in order
  double start_s = 0;              ///< clock time the run started (arrival times are offsets)
  double end_s = 0;                ///< clock time the last request finished
  long long num_preemptions = 0;   ///< preemptions over the run
  long long num_swap_outs = 0;        ///< preemptions by swapping (chapter 7)
  long long num_swap_ins = 0;         ///< requests swapped back in
  long long num_draft_tokens = 0;     ///< draft rows verified (speculative decoding)
  long long num_accepted_tokens = 0;  ///< of those, accepted
  int num_kv_blocks = 0;           ///< size of the KV pool
  KVCacheMetrics kv;               ///< the KV manager's counters at the end (prefix hits …)
  BatchWaste waste;                ///< static batching only
};

/// \brief Runs `workload` under continuous batching. Each request's `arrival_s` is an offset
/// from the start (the clock's time when the call begins; the returned requests carry
/// absolute times); ids must be unique. With a `drafter`, requests whose
/// `num_speculative_tokens` > 0 speculate (see the file comment). Throws what `Scheduler`
/// throws, and `std::logic_error` if the scheduler stops making progress (a bug, never a hang).
ServingRun run_continuous(std::vector<Request> workload, const SchedulerConfig& config,
                          Executor& executor, Clock& clock, const Detokenizer& detokenize = {},
                          Drafter* drafter = nullptr);

/// \brief Sorts requests by arrival time (stable: equal times keep their order) and makes
/// arrival times absolute by adding `start_s`. Shared by both batching policies.
void order_arrivals(std::vector<Request>& workload, double start_s);

}  // namespace nanoserve::engine
