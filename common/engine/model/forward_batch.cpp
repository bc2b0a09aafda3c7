#include "common/engine/model/forward_batch.h"

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

ForwardBatch ForwardBatch::single(int seq, std::vector<int> tokens, int start_pos,
                                  LogitRows which) {
  ForwardBatch b;
  const int n = static_cast<int>(tokens.size());
  b.tokens = std::move(tokens);
  b.chunks.push_back({seq, start_pos, n});
  if (which == LogitRows::kAll) {
    for (int r = 0; r < n; ++r) b.logit_rows.push_back(r);
  } else if (n > 0) {
    b.logit_rows.push_back(n - 1);
  }
  return b;
}

}  // namespace nanoserve::engine
