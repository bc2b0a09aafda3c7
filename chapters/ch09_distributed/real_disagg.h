#pragma once
/// \file
/// \brief Chapter 9's disaggregated run for real: under `mpirun -np N`, rank 0 is the decode
/// instance and every other rank a prefill instance, each with its own scheduler, KV pool and
/// model executor (the kernels, on a GPU or the CPU simulator), the KV moving over the
/// `Communicator` (`engine::run_disaggregated`). The decode rank then serves the same workload
/// with one colocated engine and compares every request's tokens.

#include <string>
#include <vector>

#include "common/dist/communicator.h"
#include "common/engine/disagg/disaggregated.h"
#include "common/engine/model/device_model.h"

namespace nanoserve::ch09 {

/// \brief The workload and pools of the real run: small, so that the simulator runs it in
/// seconds; pools small enough that the decode instance runs out of blocks and back-pressures.
struct RealRunOptions {
  int num_requests = 6;     ///< requests (arriving together)
  int max_prompt = 40;      ///< longest prompt (long-tailed, BOS first)
  int max_output = 12;      ///< longest output
  int block_size = 4;       ///< tokens per KV block (small: several blocks per prompt)
  int max_model_len = 56;   ///< context of every instance
  int prefill_blocks = 32;  ///< each prefill instance's pool
  int decode_blocks = 20;   ///< the decode instance's pool (a few requests at a time)
  std::uint64_t seed = 5;   ///< keys the workload
  /// \brief Weights and activations (`--dtype`). Both sides of each comparison run in it.
  DType dtype = DType::kF32;
  DType kv_dtype = DType::kF32;  ///< the KV caches (`--kv-dtype`), and what a hand-off moves
};

/// \brief The real runs' workload: `o.num_requests` requests arriving together, long-tailed
/// prompts (BOS first) up to `o.max_prompt`, outputs of 2 to `o.max_output` tokens, even ids
/// greedy and odd ids sampled at temperature 0.9.
std::vector<engine::Request> real_workload(const RealRunOptions& o, int vocab);

/// \brief What the run did, summed over the ranks (on every rank).
struct RealRunResult {
  bool is_decode_rank = false;  ///< this rank printed and compared
  int num_requests = 0;         ///< requests of the workload
  int tokens_equal = 0;         ///< decode rank: requests whose tokens equal the colocated run's
  std::string dtype = "fp32";     ///< weights and activations of both runs
  std::string kv_dtype = "fp32";  ///< their KV caches (what a hand-off moves)
  long long handoffs = 0;       ///< requests handed off (sent = received, checked)
  long long blocks = 0;         ///< KV blocks moved
  long long bytes = 0;          ///< KV bytes moved
  long long deferred_adoptions = 0;  ///< decode: adoptions that waited for blocks
  long long prefill_stalls = 0;      ///< prefill: waits for a send (back-pressure)
  long long decode_steps = 0;        ///< decode instance's passes
  long long prefill_steps = 0;       ///< all prefill instances' passes
  long long blocks_left = 0;         ///< blocks in use at the end, all ranks (0)
};

/// \brief Runs the disaggregated workload on every rank of `comm` (collective: every rank
/// calls it), then the colocated comparison on the decode rank. Throws `InvalidArgument` for
/// fewer than 2 ranks, `std::logic_error` when blocks sent and received differ.
RealRunResult run_real_disaggregated(const engine::DeviceModel& model, dist::Communicator& comm,
                                     const RealRunOptions& o);

}  // namespace nanoserve::ch09
