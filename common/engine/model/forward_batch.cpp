#include "common/engine/model/forward_batch.h"

#include <algorithm>
#include <string>

#include "common/error.h"

namespace nanoserve::engine {

std::vector<int> ForwardBatch::positions() const {
  std::vector<int> pos;
  pos.reserve(tokens.size());
  for (const SequenceChunk& c : chunks) {
    for (int i = 0; i < c.num_tokens; ++i) pos.push_back(c.start_pos + i);
  }
  return pos;
}

void ForwardBatch::validate(int vocab_size) const {
  const auto fail = [](const std::string& what) { throw InvalidArgument("ForwardBatch: " + what); };
  if (tokens.empty()) fail("no tokens");
  std::int64_t covered = 0;
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    const SequenceChunk& c = chunks[i];
    if (c.num_tokens < 1) {
      fail("chunk " + std::to_string(i) + " has num_tokens = " + std::to_string(c.num_tokens));
    }
    if (c.start_pos < 0) {
      fail("chunk " + std::to_string(i) + " starts at position " + std::to_string(c.start_pos));
    }
    covered += c.num_tokens;
  }
  if (covered != rows()) {
    fail("the chunks cover " + std::to_string(covered) + " rows but there are " +
         std::to_string(rows()) + " tokens");
  }
  for (std::size_t r = 0; r < tokens.size(); ++r) {
    if (tokens[r] < 0 || tokens[r] >= vocab_size) {
      fail("token id " + std::to_string(tokens[r]) + " at row " + std::to_string(r) +
           " is outside the vocabulary [0, " + std::to_string(vocab_size) + ")");
    }
  }
  for (std::size_t i = 0; i < logit_rows.size(); ++i) {
    const int r = logit_rows[i];
    if (r < 0 || r >= rows() || (i > 0 && r <= logit_rows[i - 1])) {
      fail("logit row " + std::to_string(r) + " (entry " + std::to_string(i) +
           ") is not ascending inside [0, " + std::to_string(rows()) + ")");
    }
  }
}

void ForwardBatch::add_chunk(std::int64_t seq, const int* first, int n, int start_pos,
                             const BlockTable* table) {
  tokens.insert(tokens.end(), first, first + n);
  SequenceChunk c;
  c.seq = seq;
  c.start_pos = start_pos;
  c.num_tokens = n;
  if (table != nullptr) {
    const int block_size = table->block_size();
    const int used = (start_pos + n + block_size - 1) / block_size;
    const std::vector<int>& ids = table->block_ids();
    c.block_ids.assign(ids.begin(), ids.begin() + std::min<int>(used, int(ids.size())));
    for (int p = start_pos; p < start_pos + n; ++p) slot_mapping.push_back(table->slot(p));
  }
  chunks.push_back(std::move(c));
}

ForwardBatch ForwardBatch::single(std::int64_t seq, const std::vector<int>& tokens,
                                  int start_pos, LogitRows which, const BlockTable* table) {
  ForwardBatch b;
  const int n = static_cast<int>(tokens.size());
  b.add_chunk(seq, tokens.data(), n, start_pos, table);
  if (which == LogitRows::kAll) {
    for (int r = 0; r < n; ++r) b.logit_rows.push_back(r);
  } else if (n > 0) {
    b.logit_rows.push_back(n - 1);
  }
  return b;
}

}  // namespace nanoserve::engine
