#pragma once
/// \file
/// \brief `SchedulerOutput`: the plan of one forward pass, as the scheduler hands it to the
/// executor (vLLM v1's `SchedulerOutput`). Chapters 3 and 4 produce it; the `ModelExecutor`
/// (or, in tests, the `FakeExecutor`) consumes it — it is all an executor reads of the step.
///
/// Each scheduled sequence contributes a run of consecutive positions — a whole prompt, a
/// prefill chunk, or the one token sampled last — and the runs are laid out row after row:
///
///     rows:        0  1  2  3  4  5 | 6  | 7        T = 8 rows (num_batched_tokens)
///     sequence:    req 4, pos 32..37 | 2  | 7
///                  (prefill chunk)   |(decode, pos 41)|(decode, pos 9)
///     input_ids:   its tokens at those positions
///     positions:   32 33 34 35 36 37 | 41 | 9
///     slot_mapping: block_table.slot(position) of each row  (where the row's K/V is written)
///     sample:      no (prompt not done)| yes | yes  → logits only of rows 6 and 7
///
/// A sequence samples a token only when its run reaches its last token; a prefill chunk that
/// stops short computes KV and nothing else. The executor returns one token per sampling
/// sequence, in order.

#include <cstdint>
#include <vector>

#include "common/engine/kv/block_table.h"
#include "common/engine/kv/kv_cache_block.h"
#include "common/engine/serve/request.h"

namespace nanoserve::engine {

/// \brief One sequence's part of a forward pass.
///
/// \par Example
/// \snippet tests/ch04/test_examples_serve.cpp SchedulerOutput
struct ScheduledSequence {
  int64_t seq_id = 0;  ///< the request's id
  /// \brief Its tokens and sampling parameters. Valid until the scheduler's next `update`
  /// (which may retire the request).
  const Request* request = nullptr;
  /// \brief Its block table in the KV manager (positions [0, start_pos + num_tokens) have
  /// slots). Valid until the scheduler's next `update`.
  const BlockTable* block_table = nullptr;
  int row_begin = 0;   ///< first row of the batch holding this sequence's tokens
  int start_pos = 0;   ///< position of its first new token (its num_computed_tokens)
  int num_tokens = 0;  ///< new tokens computed in this pass (>= 1)
  bool sample = false;  ///< whether the pass samples a token at position start_pos + num_tokens

  /// \brief Position after the run: where the sampled token goes when `sample`.
  int end_pos() const { return start_pos + num_tokens; }
};

/// \brief Everything one forward pass computes.
///
/// \par Example
/// \snippet tests/ch04/test_examples_serve.cpp SchedulerOutput
struct SchedulerOutput {
  /// \brief Scheduled sequences in row order: running ones first (in admission order), then
  /// the ones admitted in this step.
  std::vector<ScheduledSequence> seqs;
  std::vector<int> input_ids;         ///< (T) the token of every row
  std::vector<int> positions;         ///< (T) each row's position in its sequence
  std::vector<int64_t> slot_mapping;  ///< (T) each row's KV slot, block_id*block_size+offset
  std::vector<BlockCopy> block_copies;  ///< copy-on-write copies to perform before the pass
  std::vector<int64_t> preempted_ids;   ///< requests preempted while this step was planned
  /// \brief Rows a static batch computes for nothing (padding, finished members' rows): not
  /// in the arrays above, but a padded forward pays for them, so an executor charges them.
  int num_wasted_rows = 0;

  /// \brief Rows T (sum of the sequences' num_tokens).
  int num_batched_tokens() const { return static_cast<int>(input_ids.size()); }
  /// \brief Number of sequences that sample a token (the size `execute` must return).
  int num_sampled() const {
    int n = 0;
    for (const ScheduledSequence& s : seqs) n += s.sample;
    return n;
  }
  /// \brief Rows whose logits are needed, ascending: the last row of each sampling sequence.
  std::vector<int> logit_rows() const {
    std::vector<int> rows;
    for (const ScheduledSequence& s : seqs) {
      if (s.sample) rows.push_back(s.row_begin + s.num_tokens - 1);
    }
    return rows;
  }
  /// \brief Whether nothing was scheduled.
  bool empty() const { return seqs.empty(); }

  /// \brief Appends `num_tokens` rows of `request` starting at `start_pos`, with slots from
  /// `table` (which must cover them). Used by the schedulers.
  void add(const Request& request, const BlockTable& table, int start_pos, int num_tokens) {
    ScheduledSequence s;
    s.seq_id = request.id();
    s.request = &request;
    s.block_table = &table;
    s.row_begin = num_batched_tokens();
    s.start_pos = start_pos;
    s.num_tokens = num_tokens;
    s.sample = start_pos + num_tokens == request.seq.num_tokens();
    seqs.push_back(s);
    for (int p = start_pos; p < start_pos + num_tokens; ++p) {
      input_ids.push_back(request.seq.token_ids[static_cast<size_t>(p)]);
      positions.push_back(p);
      slot_mapping.push_back(table.slot(p));
    }
  }
};

}  // namespace nanoserve::engine
