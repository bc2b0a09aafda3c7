#pragma once
/// \file
/// \brief `ForwardBatch`: what one forward pass computes — the input rows of one or more
/// sequences, where each sequence's KV lives, and which rows need logits. It is the only thing
/// the model side reads about a step: a paged cache gets each chunk's block table, each row's
/// slot and the copy-on-write copies from here, never from the `KVCacheManager`.
///
/// A batch is a list of chunks, each a run of consecutive positions of one sequence:
///
///     rows:    0 1 2 3 4 5 | 6 | 7      tokens (T = 8), chunk after chunk
///     chunks:  seq 0, pos 0..5 (prompt) | seq 3, pos 41 (decode) | seq 1, pos 9 (decode)
///     logits:  rows 5, 6, 7             the last row of each chunk that samples a token
///
///   paged KV only (chapter 2 on; empty for chapter 1's naive cache):
///     block_ids:     per chunk, its block table covering positions [0, start_pos + num_tokens)
///     slot_mapping:  (T) block_ids[p / B] * B + p % B of each row — where its K/V is written
///     block_copies:  copy-on-write (src, dst) pairs, performed before any row is written
///
/// Chapter 1 always has one chunk (a prompt, or one decode position); chapter 4's continuous
/// batching mixes prefill chunks and decodes of many sequences in one batch. The layer loop
/// treats rows independently except in attention, where the `DeviceKVCache` uses the chunks.

#include <cstdint>
#include <vector>

#include "common/engine/kv/block_table.h"
#include "common/engine/kv/kv_cache_block.h"

namespace nanoserve::engine {

/// \brief A run of consecutive positions of one sequence inside a `ForwardBatch`.
///
/// \par Example
/// \snippet tests/ch01/test_examples_model.cpp ForwardBatch
struct SequenceChunk {
  std::int64_t seq = 0;  ///< the sequence's id (for a `NaiveKVCache`: its region)
  int start_pos = 0;     ///< position of the chunk's first token in its sequence
  int num_tokens = 0;    ///< rows of the chunk (>= 1)
  /// \brief Paged KV: the sequence's block table, covering positions
  /// [0, start_pos + num_tokens). Empty for the naive cache.
  std::vector<int> block_ids;
};

/// \brief Which rows of a single-chunk batch need logits.
enum class LogitRows {
  kLast,  ///< only the last row (generation: the next token)
  kAll,   ///< every row (evaluation, `--check` of every position)
};

/// \brief The input of one forward pass.
///
/// \par Example
/// \snippet tests/ch01/test_examples_model.cpp ForwardBatch
struct ForwardBatch {
  std::vector<int> tokens;             ///< (T) token ids, the rows of all chunks in order
  std::vector<SequenceChunk> chunks;   ///< in row order; their num_tokens sum to T
  std::vector<int> logit_rows;         ///< ascending rows whose logits the pass returns
  /// \brief Paged KV: (T) the slot of every row, `block_id * block_size + offset`.
  std::vector<std::int64_t> slot_mapping;
  /// \brief Paged KV: copy-on-write copies to perform before any row is written.
  std::vector<BlockCopy> block_copies;

  /// \brief Number of rows T.
  int rows() const { return static_cast<int>(tokens.size()); }
  /// \brief True when every chunk is one row (a decode step: one new token per sequence).
  bool one_row_per_chunk() const {
    return static_cast<int>(chunks.size()) == rows();  // chunks are >= 1 row and cover T
  }
  /// \brief (T) the position of every row in its sequence.
  std::vector<int> positions() const;
  /// \brief Throws `InvalidArgument` naming the problem when the chunks do not cover the
  /// tokens exactly, a chunk is empty or starts at a negative position, a token id is outside
  /// `[0, vocab_size)`, or `logit_rows` is not ascending inside `[0, T)`.
  void validate(int vocab_size) const;

  /// \brief Appends a chunk: the `n` tokens at `tokens` of sequence `seq`, at positions
  /// `start_pos ..`. With a `table` (paged KV, covering those positions) the chunk carries its
  /// block ids and the rows their slots. Logit rows are not touched.
  void add_chunk(std::int64_t seq, const int* tokens, int n, int start_pos,
                 const BlockTable* table = nullptr);

  /// \brief One chunk: `tokens` of sequence `seq` at positions `start_pos ..`, with its
  /// block table `table` when the cache is paged.
  static ForwardBatch single(std::int64_t seq, const std::vector<int>& tokens, int start_pos,
                             LogitRows which, const BlockTable* table = nullptr);
};

}  // namespace nanoserve::engine
