#pragma once
/// \file
/// \brief `FakeExecutor`: a stand-in for the model that makes scheduling testable exactly and
/// instantly (chapters 3 and 4). It keeps a fake paged KV cache and "attends" through it, so
/// a wrong block table, slot mapping, block copy or prefix-cache hit changes the tokens:
///
///     swaps:        blocks_to_swap_out copied to a fake host pool, blocks_to_swap_in back
///                   (and the host copy wiped, so a stale one is never read twice)
///     write phase:  kv[slot_mapping[row]] = (input_ids[row], positions[row])   every row
///     read phase:   for each sampling sequence, walk positions 0..end-1 through its block
///                   table: every slot must hold (some token, that position) — an unwritten
///                   or misplaced slot throws — and the tokens read are hashed
///     token:        fake_next_token(sampling, tokens read)
///     drafts:       a sequence verifying k drafts gets the fake token at each of its k + 1
///                   logit rows while the drafts equal them (scheduler_output.h's layout)
///
/// The fake model is `fake_next_token`: a hash of the whole context, mixed with the
/// request's Philox draw at the new position unless greedy. So a request's tokens depend on
/// its own tokens and (seed, position) only, and `fake_reference_run` can compute them with
/// no scheduler, no batch and no KV at all — the reference the equality tests compare with.
///
/// Cost model (virtual time): each pass advances the clock by step_s + row_s · (rows +
/// wasted rows): a fixed cost (reading the weights once per step, which dominates a decode)
/// plus a per-row cost (the FLOPs of each token). Attention's growth with context is left
/// out on purpose: the fake is for scheduling behaviour, not performance claims. With
/// `FakeCostModel::pass_s` set (chapter 4's `--executor cost-model --cost-device NAME`) the
/// clock advances by that function of the pass instead — the roofline model of a named GPU
/// (modeled_executor.h), where attention's growth with context is counted.

#include <cstdint>
#include <functional>
#include <vector>

#include "common/engine/serve/executor.h"
#include "common/engine/serve/request.h"

namespace nanoserve::harness {

/// \brief Virtual seconds a fake forward pass takes: step_s + row_s · rows, or `pass_s(output)`
/// when it is set.
struct FakeCostModel {
  /// \brief The defaults: 10 ms per pass + 0.2 ms per row.
  FakeCostModel() = default;
  /// \brief `step` seconds per pass + `row` seconds per row.
  FakeCostModel(double step, double row) : step_s(step), row_s(row) {}
  double step_s = 0.010;  ///< fixed cost per forward pass
  double row_s = 0.0002;  ///< cost per computed row (wasted rows included)
  /// \brief When set, the seconds of a pass instead of step_s + row_s · rows (e.g. a
  /// `PassTimer`, modeled_executor.h).
  std::function<double(const engine::SchedulerOutput&)> pass_s;
};

/// \brief The fake model's token at position `n` of a context `tokens[0..n)`: greedy
/// requests get a hash of the context (mod `vocab_size`); others mix in
/// `random_bits(seed, n, RngStream::kSample)`.
int fake_next_token(const SamplingParams& sampling, const int* tokens, int n, int vocab_size);

/// \brief What `r` produces when it runs alone with the fake model: appends
/// `fake_next_token` tokens with `append_token` until a stop rule ends it (token times are
/// 1, 2, 3 …). No scheduler, batch or KV cache is involved.
engine::Request fake_reference_run(engine::Request r, int vocab_size, int max_model_len,
                           const engine::Detokenizer& detokenize = {});

/// \brief The fake model behind the `Executor` interface, over a fake paged KV cache of
/// `num_blocks` × `block_size` slots.
class FakeExecutor : public engine::Executor {
 public:
  /// \brief `clock` (may be null) is advanced by `cost` at every pass. Throws
  /// `InvalidArgument` for non-positive sizes.
  FakeExecutor(int num_blocks, int block_size, int vocab_size, engine::SimulatedClock* clock = nullptr,
               FakeCostModel cost = {});

  /// \brief Block copies, then every row's write, then every sampling sequence's read and
  /// token (see the file comment). Throws `std::logic_error` naming the request, position
  /// and slot when the KV it reads was never written or belongs to another position, and
  /// when a row's slot disagrees with its block table.
  std::vector<int> execute(const engine::SchedulerOutput& output) override;

  /// \brief Forward passes run.
  long long num_steps() const { return num_steps_; }
  /// \brief Rows computed, useful and wasted.
  long long num_rows() const { return num_rows_; }

 private:
  struct KVSlot {
    int token = -1;
    int position = -1;  ///< -1: never written
  };
  int block_size_;
  int vocab_size_;
  engine::SimulatedClock* clock_;
  FakeCostModel cost_;
  std::vector<KVSlot> kv_;  ///< (num_blocks * block_size) the fake device KV pool
  std::vector<KVSlot> host_;  ///< the fake host pool (swap preemption), grown on demand
  std::vector<int> context_;  ///< scratch: the tokens one sequence reads back
  long long num_steps_ = 0;
  long long num_rows_ = 0;
};

}  // namespace nanoserve::harness
