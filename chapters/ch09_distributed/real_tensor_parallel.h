#pragma once
/// \file
/// \brief Chapter 9's tensor-parallel run for real: under `mpirun -np N`, every rank holds its
/// shard of the model (`engine::shard_model`: 1/N of the heads, FFN rows and vocabulary) and a
/// `ModelExecutor` whose runner adds the group's collectives (`engine::TensorParallelGroup`);
/// rank 0 runs chapter 4's scheduler and broadcasts each pass, the others follow. Rank 0 then
/// serves the same workload with the whole model on one device and compares every request's
/// tokens.

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chapters/ch09_distributed/real_disagg.h"
#include "common/dist/communicator.h"
#include "common/engine/model/tensor_parallel_group.h"
#include "common/model.h"

namespace nanoserve::ch09 {

/// \brief What the run did, as seen by one rank.
struct TensorParallelRunResult {
  bool is_rank0 = false;         ///< this rank printed and compared
  int num_requests = 0;          ///< requests of the workload (all greedy)
  int tokens_equal = 0;          ///< rank 0: requests whose tokens equal the one-device engine's
  /// \brief Whether equal tokens are required: fp32 activations (the sums differ only in their
  /// order). With fp16/bf16 each rank rounds its partial sum before the all-reduce, where the
  /// single device rounds the whole sum once, so a near-tie may pick another token: reported.
  bool exact = true;
  std::string dtype = "fp32";    ///< activations (and weights)
  std::string kv_dtype = "fp32"; ///< KV cache
  std::vector<int> first_tokens;  ///< rank 0: request 0's generated tokens
  long long passes = 0;          ///< forward passes (rank 0 ran, the others followed)
  engine::TensorParallelGroup::Counters counters;  ///< this rank's collectives and plans
  std::int64_t weight_bytes = 0;        ///< rank 0's device weights
  std::int64_t whole_weight_bytes = 0;  ///< the whole model's on one device
  std::int64_t max_rank_weight_bytes = 0;  ///< the largest rank's
  std::int64_t kv_pool_bytes = 0;       ///< rank 0's KV pool
  std::int64_t whole_kv_pool_bytes = 0;  ///< the same blocks for the whole model
};

/// \brief Runs `RealRunOptions`' workload (made greedy) through `model` split across every rank
/// of `comm` (collective: every rank calls it), then through the whole model on rank 0.
/// Throws `InvalidArgument` when `model` cannot be split `comm.size()` ways.
TensorParallelRunResult run_real_tensor_parallel(const Model& model, dist::Communicator& comm,
                                                 const RealRunOptions& o);

/// \brief Rank 0's report of `r`: the shards, bytes per rank, the collectives, request 0's
/// tokens, the comparison with one device, and what this model's all-reduces would cost on
/// each link (modeled: `roofline::all_reduce_s`); one record in `report`.
void print_tensor_parallel(const TensorParallelRunResult& r, const ModelConfig& config,
                           const dist::Communicator& comm, const std::string& model_name,
                           nlohmann::json& report);

}  // namespace nanoserve::ch09
