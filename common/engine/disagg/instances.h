#pragma once
/// \file
/// \brief The two roles of a disaggregated run, one function each (`disaggregated.h` explains
/// the protocol; `run_disaggregated` picks the role of a rank).

#include <vector>

#include "common/engine/disagg/disaggregated.h"

namespace nanoserve::engine {

/// \brief A prefill instance: computes the prompts of `share` (arrival times absolute), hands
/// each off to `config.decode_rank` with its first token and KV blocks, overlapping the sends
/// with the next prompts, and ends with an end-of-work message. Fills `stats`.
void run_prefill_instance(std::vector<Request> share, const DisaggConfig& config,
                          ModelExecutor& executor, dist::Communicator& comm, Clock& clock,
                          DisaggStats& stats);

/// \brief The decode instance: adopts the requests handed off by every prefill rank (their KV
/// received into its pool) and generates their remaining tokens with continuous batching.
/// `workload` is every request of the run (arrival times absolute); returns them all finished,
/// by id, with this instance's steps. Fills `stats`.
ServingRun run_decode_instance(std::vector<Request> workload, const DisaggConfig& config,
                               ModelExecutor& executor, dist::Communicator& comm, Clock& clock,
                               DisaggStats& stats);

}  // namespace nanoserve::engine
