#pragma once
/// \file
/// \brief `TensorParallelGroup`: one rank's part in running a model split across N ranks
/// (Megatron-LM's tensor parallelism, Shoeybi et al. 2019; chapter 9) — the collectives its
/// `ModelRunner` adds to the forward pass, and the plan of every pass, which rank 0 (the one
/// with the scheduler and the sampler) broadcasts to the others.
///
///     rank 0: scheduler, sampler                  rank r > 0
///     ──────────────────────────                  ──────────
///     runner.forward_on_device(batch):            follow_plans(runner, cache):
///       plan = encode_batch(batch) ─ broadcast ─►   batch = decode_batch(plan)
///       the pass over shard 0  ◄── all-reduces, ──► runner.forward_on_device(batch) over
///                                  all-gather       shard r (the logits are not used)
///       sample from the whole logits
///     stop(): an empty plan ─────────────────────►  return
///
/// A pass on every rank, the same rows, each over its own shard (`shard_model`; T rows, dim d,
/// vocabulary V, L layers):
///
///     x = embedding_r[local(token)]     a token outside rank r's vocabulary slice reads the
///     all_reduce(x)                     shard's zero row: the sum is the embedding, exactly
///     per layer:
///       a_r = attention of rank r's q heads over its kv heads (its share of the KV pool)
///       x = x + a_r Wo_rᵀ on rank 0,    x = a_r Wo_rᵀ elsewhere  (the residual counted once)
///       all_reduce(x)                   x + Σ_r a_r Wo_rᵀ  =  x + a Woᵀ   (row-parallel Wo)
///       h_r = silu(xn W1_rᵀ) ⊙ xn W3_rᵀ rank r's FFN rows                 (column-parallel)
///       x = x + h_r W2_rᵀ on rank 0,    x = h_r W2_rᵀ elsewhere;  all_reduce(x)
///     logits_r = rmsnorm(x) Wcls_rᵀ     (rows, V/N + 1): rank r's slice (+ the zero row's 0)
///     all_gather(logits_r) → (rows, V)  every rank holds the whole logits; rank 0 samples
///
/// That is 2L + 1 all-reduces of T × d activations and one all-gather of rows × V fp32 logits
/// per pass; the residual add rides in the row-parallel linear's epilogue, so tensor
/// parallelism adds no kernel. Why all-gather the logits rather than sample in a distributed
/// way (a max/sum all-reduce per row): sampling stays the single-GPU code — temperature,
/// top-k, top-p, min-p, the per-request RNG and logprobs — so its tokens are exactly those of
/// one GPU given the same logits, and the gather costs rows × V × 4 bytes, ~33 MB for a batch
/// of 64 at Llama 3's V = 128256 (~0.1 ms on NVLink 4), against 2L + 1 all-reduces per step.
/// vLLM gathers the logits as well (to its driver rank).
///
/// Numbers: the sum of the partial products of a row-parallel linear is the sum of one GPU's
/// dot product cut into N pieces and added in another order, so fp32 logits differ from one
/// GPU's in the last bits (`tol::kTensorParallelFp32`); at N = 1 they are bitwise equal.
///
/// The collectives run on the runner's stream (NCCL enqueues them there; MPI completes them
/// before returning); a pass ends with `Communicator::synchronize`, so a peer that died or
/// hangs is a `CommError` from the watchdog, never a hang. A pass under tensor parallelism is
/// never replayed from a CUDA graph: MPI's collectives cannot be captured (NCCL's could).

#include <cstdint>
#include <optional>
#include <vector>

#include "common/dist/communicator.h"
#include "common/engine/model/forward_batch.h"
#include "common/engine/model/tensor_parallel.h"
#include "kernels/dtype.cuh"
#include "kernels/linear_common.cuh"

namespace nanoserve::engine {

class ModelRunner;
class DeviceKVCache;

/// \brief One rank of a tensor-parallel run: its communicator, its shard, and the plan channel
/// (see the file comment). Give it to the runner through `RunnerOptions::tensor_parallel`.
///
/// \par Example
/// \snippet tests/ch09/test_tensor_parallel_runner.cpp TensorParallelGroup
class TensorParallelGroup {
 public:
  /// \brief What the group has sent and received so far.
  struct Counters {
    long long plans = 0;             ///< plans broadcast (rank 0) or received (others)
    long long plan_bytes = 0;        ///< their bytes
    long long all_reduces = 0;       ///< all-reduces of activations
    long long all_reduce_bytes = 0;  ///< bytes of each rank's buffer, summed
    long long all_gathers = 0;       ///< all-gathers of logits
    long long all_gather_bytes = 0;  ///< bytes each rank contributed, summed
  };

  /// \brief Rank `comm.rank()` of `comm.size()` running `config` (the whole model's): it holds
  /// `TensorParallelShard::of(config, rank, size)`. `comm` must outlive the group. Throws
  /// `InvalidArgument` for a shape that cannot be split that many ways.
  TensorParallelGroup(dist::Communicator& comm, const ModelConfig& config);

  /// \brief This rank.
  int rank() const { return shard_.rank; }
  /// \brief The tensor-parallel degree N.
  int size() const { return shard_.size; }
  /// \brief What this rank holds.
  const TensorParallelShard& shard() const { return shard_; }
  /// \brief What rank `r` holds.
  const TensorParallelShard& shard_of(int r) const { return shards_.at(std::size_t(r)); }
  /// \brief The whole model's vocabulary: the width of the logits a pass returns.
  int vocab_size() const { return vocab_size_; }
  /// \brief The communicator.
  dist::Communicator& comm() const { return comm_; }

  /// @name The plan channel
  /// @{

  /// \brief Rank 0: broadcasts `batch` to the other ranks (each runs it in `follow_plans`).
  /// Throws `std::logic_error` on another rank, `CommError` when a peer does not answer.
  void send_plan(const ForwardBatch& batch);
  /// \brief Ranks > 0: the next plan from rank 0, or nothing once rank 0 called `stop`. Waits
  /// at most the communicator's watchdog time, or — `wait_forever`, for a server's ranks,
  /// which may idle for hours — without limit (a dead rank 0 still ends the run: `mpirun`
  /// ends every rank when one dies). Throws `InvalidArgument` for malformed bytes.
  std::optional<ForwardBatch> receive_plan(bool wait_forever = false);
  /// \brief Rank 0: tells the other ranks that no pass follows.
  void stop();
  /// @}

  /// @name What a runner adds to a pass
  /// @{

  /// \brief The epilogue of a row-parallel linear (Wo, W2) on this rank: rank 0 adds its
  /// partial product to the residual stream, the others store theirs, and the all-reduce
  /// that follows sums residual and partial products once each.
  Epilogue row_parallel_epilogue() const {
    return rank() == 0 ? Epilogue::kAccumulate : Epilogue::kStore;
  }
  /// \brief Sums `count` elements of `type` at `x` over the ranks, in place, on `stream`.
  void all_reduce(void* x, std::int64_t count, DType type, cudaStream_t stream);
  /// \brief Columns of the logits each rank contributes to the gather: the largest shard's
  /// vocabulary rows + 1 (its zero row).
  int gather_width() const { return gather_width_; }
  /// \brief `mine` (rows, shard().vocab + 1) fp32 on the device → `logits` (rows, vocab_size())
  /// on every rank, through `gathered` (size() × rows × gather_width() floats of scratch).
  void gather_logits(const float* mine, float* gathered, int rows, float* logits,
                     cudaStream_t stream);
  /// @}

  /// \brief What was sent and received so far.
  const Counters& counters() const { return counters_; }

 private:
  dist::Communicator& comm_;
  TensorParallelShard shard_;
  std::vector<TensorParallelShard> shards_;  // every rank's
  int vocab_size_;
  int gather_width_;
  Counters counters_;
};

/// \brief A rank > 0's loop: runs every plan rank 0 sends through `runner` (made with this
/// group in its options) over `cache` (made like rank 0's: the same blocks or regions, its own
/// kv heads), until rank 0 calls `stop`. Returns the passes run. `wait_forever`: see
/// `TensorParallelGroup::receive_plan`. Throws `InvalidArgument` when the runner has no group
/// or the group's rank is 0.
long long follow_plans(ModelRunner& runner, DeviceKVCache& cache, bool wait_forever = false);

}  // namespace nanoserve::engine
