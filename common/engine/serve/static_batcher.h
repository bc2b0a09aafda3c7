#pragma once
/// \file
/// \brief Static batching, the baseline of chapter 3 (and what chapter 4 is compared with):
/// requests are grouped in arrival order into batches of `batch_size`, each batch is padded
/// and run until its LAST member finishes, and only then does the next batch start.
///
///     batch of 4, left-padded prompts, then lockstep decode steps:
///
///     req 0   · · p p p p │ g g g g g g E ·  ·       p prompt   g generated   E stop
///     req 1   p p p p p p │ g g E · · · · ·  ·       · wasted row (padding / idle member)
///     req 2   · · · · p p │ g g g g g g g g  g
///     req 3   · · · p p p │ g E · · · · · ·  ·       (the batch ends when req 2 does;
///             └ prefill ──┘ └── decode steps ──┘      requests 4.. wait for all of it)
///
/// Left padding: HF-style static batching puts the padding on the left so that every
/// member's last prompt token sits in the same column — one logits column serves the whole
/// batch and decode steps append in lockstep. In this engine each sequence has its own
/// positions and paged KV, so padding computes nothing useful; the batcher does not build
/// padded rows, it counts them (`BatchWaste::padding_rows`) and passes them to the executor
/// as `num_wasted_rows`, which a padded forward would pay for. Likewise every decode step
/// charges one idle row per member that has finished but keeps its place in the batch.
///
/// Memory: a static batch (like HF `generate`) reserves each member's worst case —
/// prompt + max_tokens, within the context — up front, so a batch closes early when the next
/// request's worst case no longer fits the KV pool, and a request whose worst case exceeds
/// the whole pool is rejected. Nothing is ever preempted. Members keep their KV blocks until
/// the batch ends.

#include <limits>
#include <vector>

#include "common/engine/serve/serving_loop.h"

namespace nanoserve::engine {

/// \brief Batch size, batch start policy and KV pool of the static batcher.
///
/// \par Example
/// \snippet tests/ch03/test_examples_static.cpp StaticBatchConfig
struct StaticBatchConfig {
  int batch_size = 8;        ///< most requests per batch
  /// \brief A batch starts when it is full or when its first member has waited this long
  /// (infinity: always wait for a full batch, except the workload's last one).
  double max_wait_s = std::numeric_limits<double>::infinity();
  int max_model_len = 256;   ///< most tokens (prompt + output) of one request
  int num_kv_blocks = 1024;  ///< physical blocks in the KV pool
  int block_size = 16;       ///< tokens per block
  bool enable_prefix_caching = false;  ///< off: the classic baseline recomputes every prompt

  /// \brief Throws `InvalidArgument` naming the field for non-positive sizes or a negative
  /// or NaN wait.
  void validate() const;
};

/// \brief KV blocks a request may need at most: its prompt plus max_tokens - 1 generated
/// tokens (the last sampled token is never written), within the context.
int worst_case_blocks(const Request& r, int max_model_len, int block_size);

/// \brief Runs `workload` under static batching (arrival times are offsets from the clock's
/// time at the call, as in `run_continuous`). Throws `InvalidArgument` for a bad config or
/// malformed request.
ServingRun run_static(std::vector<Request> workload, const StaticBatchConfig& config,
                      Executor& executor, Clock& clock, const Detokenizer& detokenize = {});

}  // namespace nanoserve::engine
