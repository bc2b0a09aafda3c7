#pragma once
/// \file
/// \brief Disaggregated prefill and decode (chapter 9; DistServe, Zhong et al. OSDI 2024;
/// Splitwise, Patel et al. ISCA 2024; Mooncake, Qin et al. FAST 2025): prompts are computed by
/// *prefill instances*, which send each finished prompt's KV blocks — only the blocks, in
/// block-table order, with the first sampled token — to a *decode instance*, which adopts them
/// into its own pool and generates the rest. Each instance is a rank of the run (its own
/// process, its own GPU), with its own scheduler, KV pool and model executor; the KV travels over
/// the `Communicator` (NCCL on GPUs, MPI in CI).
///
///     rank 1 (prefill)  prompt A ─► token 0 ─► hand_off(A): header ─┐ KV of A (isend) ──┐
///                       prompt C ─► …   (computing C while A's KV is in flight)        │
///     rank 2 (prefill)  prompt B ─► …                                                  │
///                                                                                      ▼
///     rank 0 (decode)   header A: adopt(A) when its blocks fit ─► irecv KV ─► unpack ─► decode
///                       steps of every adopted request (continuous batching, no prompts)
///
/// Why: a prompt is compute-bound and a decode step bandwidth-bound; in one engine a long prompt
/// chunk stalls every running decode (inter-token latency), and decodes slow the prompt (TTFT).
/// Apart, each phase runs alone — at the price of moving every prompt's KV once.
///
/// Protocol (one tag; headers and the end-of-work message of a rank arrive in the order sent):
///  - Every rank is given the same workload; prefill instance k (the k-th rank other than the
///    decode rank) serves requests k, k + P, k + 2P … in arrival order (a real deployment puts a
///    router in front: the chapter's exercise).
///  - A prefill instance hands a request off when its first token is sampled: header (id, token,
///    times, block count), then the packed blocks (`PagedKVCache::pack_blocks`) sent with
///    `isend` on a stream of their own; it keeps the blocks until the send completed, and goes on
///    with the next prompts meanwhile. A request finished by its first token (or rejected) sends
///    the header alone.
///  - The decode instance adopts handed-off requests in the order their headers arrived, each
///    only when `Scheduler::can_adopt` finds its blocks; the KV is received into a staging
///    buffer and unpacked into the adopted blocks before the next step.
///  - Back-pressure: a decode instance out of blocks adopts nothing; the prefill instances' sends
///    stay in flight, their blocks stay held, their pools fill, and they stop admitting prompts
///    (they wait for a send). No request is dropped.

#include <vector>

#include "common/dist/communicator.h"
#include "common/engine/serve/executor.h"
#include "common/engine/serve/model_executor.h"
#include "common/engine/serve/scheduler.h"
#include "common/engine/serve/serving_loop.h"

namespace nanoserve::engine {

/// \brief The roles of a disaggregated run and each role's scheduler.
///
/// \par Example
/// \snippet tests/ch09/test_examples_disagg.cpp DisaggConfig
struct DisaggConfig {
  SchedulerConfig prefill;  ///< every prefill instance's scheduler and KV pool
  SchedulerConfig decode;   ///< the decode instance's
  int decode_rank = 0;      ///< the decode instance; every other rank is a prefill instance
  /// \brief Check the scheduler's invariants (blocks conserved, tables = requests) after every
  /// step, hand-off and adoption; throws `std::logic_error` on a violation (tests).
  bool check_invariants = false;

  /// \brief Throws `InvalidArgument` naming the field unless there are >= 2 ranks, the decode
  /// rank is one of them, both roles have the same block size and max_model_len, and the decode
  /// pool holds at least one request of max_model_len tokens.
  void validate(int num_ranks) const;
  /// \brief The scheduler config of `rank`'s role.
  const SchedulerConfig& role(int rank) const { return rank == decode_rank ? decode : prefill; }
};

/// \brief What one instance did in a disaggregated run.
///
/// \par Example
/// \snippet tests/ch09/test_examples_disagg.cpp DisaggConfig
struct DisaggStats {
  long long handoffs = 0;   ///< requests whose KV was sent (prefill) or received (decode)
  long long blocks = 0;     ///< KV blocks sent or received
  long long bytes = 0;      ///< KV payload bytes sent or received
  long long steps = 0;      ///< forward passes run by this instance
  int max_in_flight = 0;    ///< prefill: most sends in flight at once
  /// \brief Prefill: times it had nothing to compute but sends in flight, and waited for one
  /// (the decode instance's back-pressure reaching it).
  long long prefill_stalls = 0;
  /// \brief Decode: times the oldest handed-off request found no blocks and waited.
  long long deferred_adoptions = 0;
  int kv_blocks_used_at_end = 0;  ///< blocks still in use when the run ended (must be 0)
};

/// \brief Runs this rank's role in a disaggregated run of `workload` (the same on every rank;
/// arrival times are offsets from the start, taken on every rank after a barrier). `executor`
/// must be sized for this rank's role (`executor_options_for(config.role(rank))`). Returns, on
/// the decode rank, every request finished (by id) with the decode instance's steps; on a
/// prefill rank, a run without requests. Throws `InvalidArgument` for a bad config,
/// `dist::CommError` when a peer fails.
ServingRun run_disaggregated(std::vector<Request> workload, const DisaggConfig& config,
                             ModelExecutor& executor, dist::Communicator& comm, Clock& clock,
                             DisaggStats* stats = nullptr);

}  // namespace nanoserve::engine
