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
///
/// Speculative decoding (chapter 7, vLLM v1's design): a decoding request may carry k draft
/// tokens, which ride in the same pass as k more rows after its last token; every one of its
/// 1 + k rows returns logits, and the rejection rule decides how many drafts stand:
///
///     rows:        8 | 9 10 11 12                  request 5: last token t at 40, drafts d1..d3
///     positions:  41 | 40 41 42 43                 (num_draft_tokens = 3)
///     input_ids:     | t  d1 d2 d3
///     returned:    y | d1 d2 z  -1                 d1 d2 accepted, z replaces d3, -1 pads
///
/// So the executor returns one entry per sampled token slot — `ScheduledSequence::
/// num_sampled_tokens()` of them per sequence, in order: for a verification, the n accepted
/// drafts, the token after them (a correction or the bonus), then k − n entries of -1.
///
/// Parallel sampling (chapter 7): when a request with n samples finishes its prompt, the
/// step forks the other n − 1 (`ScheduledSequence::forks`); its last row then gives n entries,
/// its own token and one per fork, each drawn with that sample's seed at the same position.

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
  int num_tokens = 0;  ///< new tokens computed in this pass (>= 1), drafts included
  bool sample = false;  ///< whether the pass samples a token at position start_pos + num_tokens
  /// \brief Speculative decoding: the last `num_draft_tokens` rows are draft tokens (the
  /// request's `draft.tokens`) to verify; every one of the 1 + k last rows needs logits.
  int num_draft_tokens = 0;
  /// \brief Parallel sampling: the samples forked from this request in this step, whose first
  /// tokens come from the same last row, each drawn with its own seed (valid until `update`).
  std::vector<const Request*> forks;

  /// \brief Position after the run: where the sampled token goes when `sample` (with drafts:
  /// the position after the last draft, where the bonus token goes when all are accepted).
  int end_pos() const { return start_pos + num_tokens; }
  /// \brief Rows whose logits the pass needs: 1 + num_draft_tokens when it samples, else 0.
  int num_logit_rows() const { return sample ? 1 + num_draft_tokens : 0; }
  /// \brief Entries of the executor's result that belong to it (see the file comment): its
  /// logit rows' tokens, then one per fork.
  int num_sampled_tokens() const { return num_logit_rows() + static_cast<int>(forks.size()); }
  /// \brief Position of the token its first logit row samples (its first draft's position).
  int first_sample_pos() const { return end_pos() - num_draft_tokens; }
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
  /// \brief Swap preemption (chapter 7): blocks to copy device → host first, then host →
  /// device, both before the block copies and the pass.
  std::vector<BlockSwap> blocks_to_swap_out;
  std::vector<BlockSwap> blocks_to_swap_in;  ///< see `blocks_to_swap_out`
  std::vector<BlockCopy> block_copies;  ///< copy-on-write copies to perform before the pass
  std::vector<int64_t> preempted_ids;   ///< requests preempted while this step was planned
  /// \brief Rows a static batch computes for nothing (padding, finished members' rows): not
  /// in the arrays above, but a padded forward pays for them, so an executor charges them.
  int num_wasted_rows = 0;

  /// \brief Rows T (sum of the sequences' num_tokens).
  int num_batched_tokens() const { return static_cast<int>(input_ids.size()); }
  /// \brief Entries `execute` must return: one per sampling sequence, plus one per draft token.
  int num_sampled() const {
    int n = 0;
    for (const ScheduledSequence& s : seqs) n += s.num_sampled_tokens();
    return n;
  }
  /// \brief Rows whose logits are needed, ascending: the last row of each sampling sequence,
  /// and with drafts its last 1 + k rows.
  std::vector<int> logit_rows() const {
    std::vector<int> rows;
    for (const ScheduledSequence& s : seqs) {
      for (int i = s.num_tokens - s.num_logit_rows(); i < s.num_tokens; ++i) {
        rows.push_back(s.row_begin + i);
      }
    }
    return rows;
  }
  /// \brief Draft rows of the pass (Σ num_draft_tokens).
  int num_draft_rows() const {
    int n = 0;
    for (const ScheduledSequence& s : seqs) n += s.num_draft_tokens;
    return n;
  }
  /// \brief Whether nothing was scheduled (a step may still swap blocks out).
  bool empty() const { return seqs.empty(); }

  /// \brief Appends `num_tokens` rows of `request` starting at `start_pos`, with slots from
  /// `table` (which must cover them). Used by the schedulers.
  void add(const Request& request, const BlockTable& table, int start_pos, int num_tokens) {
    add(request, table, start_pos, num_tokens, 0);
  }
  /// \brief `add`, followed by the first `num_draft_tokens` of `request.draft.tokens` as rows
  /// after its last token (`table` covers them too); the sequence then samples.
  void add(const Request& request, const BlockTable& table, int start_pos, int num_tokens,
           int num_draft_tokens) {
    ScheduledSequence s;
    s.seq_id = request.id();
    s.request = &request;
    s.block_table = &table;
    s.row_begin = num_batched_tokens();
    s.start_pos = start_pos;
    s.num_tokens = num_tokens + num_draft_tokens;
    s.sample = start_pos + num_tokens == request.seq.num_tokens();
    s.num_draft_tokens = num_draft_tokens;
    seqs.push_back(s);
    const int n = request.seq.num_tokens();
    for (int p = start_pos; p < s.end_pos(); ++p) {
      input_ids.push_back(p < n ? request.seq.token_ids[static_cast<size_t>(p)]
                                : request.draft.tokens[static_cast<size_t>(p - n)]);
      positions.push_back(p);
      slot_mapping.push_back(table.slot(p));
    }
  }
};

}  // namespace nanoserve::engine
