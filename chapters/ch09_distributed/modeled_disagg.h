#pragma once
/// \file
/// \brief Chapter 9's comparison, modeled: a long-prompt, long-output workload served by
/// colocated engines (chunked prefill, one replica per GPU) and by a disaggregated pair
/// (prefill GPUs hand every request off to a decode GPU over a link). The *counts* — which
/// requests run in which pass, how many rows, when each token appears — come from the engine's
/// own schedulers (`Scheduler`, `Scheduler::adopt`) run in virtual time; the *times* come from
/// the roofline model: `harness::PassTimer` per pass on a named GPU, `roofline::transfer_s`
/// per KV hand-off on a named link. No model is run (the tokens are the fake model's,
/// `harness::fake_next_token`), so any shape can be modeled in a fraction of a second.
///
///     colocated ×2:   GPU 0  [A chunk|decodes][A chunk|decodes][decodes]…   requests 0, 2, 4 …
///                     GPU 1  [B chunk|decodes]…                             requests 1, 3, 5 …
///     disaggregated:  GPU 0  [A][B][C]…     prompts only
///                          │ KV of A over the link (latency + bytes / bandwidth)
///                     GPU 1       [decodes][decodes][decodes]…   adopts A when its KV arrived
///
/// What the model leaves out: the decode pool never runs out (it is sized for the whole
/// workload; `mpirun -np 2 ch09_distributed --disaggregated` shows back-pressure for real), a
/// transfer never waits for another on the same link, and the prefill instance frees its blocks
/// as soon as it samples (the send overlaps the next prompt).

#include <string>
#include <vector>

#include "common/engine/serve/scheduler.h"
#include "common/engine/serve/serving_loop.h"
#include "common/harness/modeled_executor.h"
#include "common/roofline/link.h"

namespace nanoserve::ch09 {

/// \brief The workload: Poisson arrivals, long-tailed long prompts, long outputs.
struct LongWorkload {
  int num_requests = 48;     ///< requests
  double rate = 3;           ///< arrivals per second (both setups get the same ones)
  int prompt_median = 2048;  ///< median prompt tokens (log-normal, sigma 0.5)
  int prompt_max = 4096;     ///< longest prompt
  int output_min = 192;      ///< output tokens, uniform in [output_min, output_max]
  int output_max = 320;      ///< longest output
  std::uint64_t seed = 9;    ///< keys every draw
};

/// \brief The requests of `w` over a vocabulary of `vocab_size` (BOS 1 first; half greedy,
/// half sampled; no stop token, so every output runs to its length).
std::vector<engine::Request> long_workload(const LongWorkload& w, int vocab_size);

/// \brief The GPUs, the link, and each role's scheduler.
struct ModeledSetup {
  harness::PassTimer timer;            ///< the model's shape, precision and GPU
  const roofline::Link* link = nullptr;  ///< between a prefill and the decode GPU
  engine::SchedulerConfig colocated;   ///< each colocated replica (chunked prefill)
  engine::SchedulerConfig prefill;     ///< each prefill instance
  engine::SchedulerConfig decode;      ///< the decode instance
  int num_prefill = 1;                 ///< prefill GPUs (colocated: as many GPUs in all)
  /// \brief Bytes of one request's KV hand-off: its prompt's blocks, K and V of every layer.
  double kv_bytes(int prompt_len) const;
};

/// \brief One modeled run.
struct ModeledRun {
  std::string config;       ///< e.g. "disaggregated 1P+1D, NVLink 4"
  int gpus = 0;             ///< GPUs it used
  engine::ServingRun run;   ///< every request, finished, by id (token times modeled)
  long long handoffs = 0;   ///< requests whose KV crossed the link
  double kv_bytes = 0;      ///< bytes that crossed
  std::vector<double> transfer_s;  ///< each hand-off's modeled transfer time
};

/// \brief `num_prefill + 1` colocated replicas (request i on replica i mod the count).
ModeledRun modeled_colocated(const std::vector<engine::Request>& workload, const ModeledSetup& s);
/// \brief `num_prefill` prefill instances (request i on instance i mod num_prefill) and one
/// decode instance joined by `s.link`.
ModeledRun modeled_disaggregated(const std::vector<engine::Request>& workload,
                                 const ModeledSetup& s);

}  // namespace nanoserve::ch09
