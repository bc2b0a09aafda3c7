#pragma once
/// \file
/// \brief `TensorParallelDecoder`: one sequence decoded through a model split across the ranks
/// of a communicator (chapter 9's tensor parallelism, Megatron-LM's split) — chapter 1's
/// `NaiveDecoder` on rank 0, the same runner and cache on every other rank following its plans.
/// What `nanoserve generate --tensor-parallel N` runs.
///
///     every rank:  its shard (shard_model) ─ ModelRunner + the group's collectives
///                                          ─ NaiveKVCache of its kv heads, one region
///     rank 0:      decoder(): a NaiveDecoder ── generate() ── each pass's plan broadcast
///     ranks > 0:   follow(): run each plan until rank 0 calls stop()
///
/// Every rank constructs it with the same arguments (the same command line), so the caches
/// match; the logits rank 0's decoder returns are the whole model's (all-gathered), so
/// sampling is the one-device code.

#include <memory>
#include <string>

#include "common/dist/communicator.h"
#include "common/engine/decode/naive_decoder.h"
#include "common/engine/model/tensor_parallel_group.h"

namespace nanoserve::engine {

/// \brief This rank's part in decoding one sequence through `model` split across the ranks
/// (see the file comment).
///
/// \par Example
/// \snippet tests/ch09/test_tensor_parallel_runner.cpp TensorParallelDecoder
class TensorParallelDecoder {
 public:
  /// \brief Rank `comm.rank()`'s shard of `model` on the device in `activation_dtype`, a runner
  /// with the group's collectives (`NaiveDecoder::runner_options`) and a one-region cache of
  /// `max_seq_len` positions in `kv_dtype`. Collective only in what it allocates: no message
  /// is sent. Throws `InvalidArgument` when `model` cannot be split `comm.size()` ways (naming
  /// the dimension) or for a `max_seq_len` outside the model's context.
  TensorParallelDecoder(dist::Communicator& comm, const Model& model, int max_seq_len,
                        DType activation_dtype, DType kv_dtype);
  ~TensorParallelDecoder();
  TensorParallelDecoder(const TensorParallelDecoder&) = delete;
  TensorParallelDecoder& operator=(const TensorParallelDecoder&) = delete;

  /// \brief Whether this is rank 0, which decodes; the others follow.
  bool leads() const { return group_.rank() == 0; }
  /// \brief Rank 0: the decoder (`generate()` runs on it; its logits are the whole model's).
  /// Throws `std::logic_error` on another rank.
  NaiveDecoder& decoder();
  /// \brief Rank 0: tells the other ranks that no pass follows (their `follow` returns). Call
  /// it once decoding is done, not when unwinding from an error (`Communicator::abort` then).
  void stop() { group_.stop(); }
  /// \brief Ranks > 0: runs every pass rank 0 sends until it calls `stop`; returns the passes.
  /// Throws `InvalidArgument` on rank 0, `dist::CommError` when rank 0 does not answer within
  /// the communicator's watchdog time.
  long long follow();

  /// \brief The group: its shard, its collectives so far.
  const TensorParallelGroup& group() const { return group_; }
  /// \brief This rank's runner (its step counters).
  const ModelRunner& runner() const { return *runner_; }
  /// \brief e.g. "tensor-parallel 2 over Open MPI v4.1.4, 2 ranks (rank 0: 4 of 8 q heads)".
  std::string description() const;

 private:
  TensorParallelGroup group_;
  std::unique_ptr<DeviceModel> device_;
  std::unique_ptr<ModelRunner> runner_;
  std::unique_ptr<NaiveKVCache> cache_;
  std::unique_ptr<NaiveDecoder> decoder_;  // rank 0
};

}  // namespace nanoserve::engine
