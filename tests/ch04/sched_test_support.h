#pragma once
// Helpers shared by the chapter-3/4 scheduling tests: requests in one line, a compact text
// form of a SchedulerOutput for exact expectations, and one scheduler step with the fake
// model.

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/harness/fake_executor.h"
#include "common/engine/serve/request.h"
#include "common/engine/serve/scheduler.h"
#include "common/engine/serve/scheduler_output.h"

namespace nanoserve::testing {

/// Tokens 100, 101, … (prompt_len of them).
inline std::vector<int> prompt_of(int prompt_len, int first = 100) {
  std::vector<int> t;
  for (int i = 0; i < prompt_len; ++i) t.push_back(first + i);
  return t;
}

/// A greedy request with a prompt of `prompt_len` distinct tokens.
inline engine::Request req(int64_t id, int prompt_len, int max_tokens, double arrival_s = 0) {
  return engine::make_request(id, prompt_of(prompt_len, 100 + 1000 * int(id)), max_tokens,
                      SamplingParams{0.0f}, arrival_s);
}

/// "id@start+n" per scheduled sequence, with "!" when it samples, space-separated:
/// "0@8+1! 1@0+6" = request 0 decodes position 8; request 1 prefills positions 0..5.
inline std::string describe(const engine::SchedulerOutput& out) {
  std::string s;
  for (const engine::ScheduledSequence& q : out.seqs) {
    if (!s.empty()) s += ' ';
    s += std::to_string(q.seq_id) + "@" + std::to_string(q.start_pos) + "+" +
         std::to_string(q.num_tokens) + (q.sample ? "!" : "");
  }
  return s;
}

/// A config with a small pool and no prefix caching, for hand-computed scenarios.
inline engine::SchedulerConfig tiny_config(int num_blocks, int block_size, int budget,
                                   int max_num_seqs = 8, int max_model_len = 64) {
  engine::SchedulerConfig c;
  c.num_kv_blocks = num_blocks;
  c.block_size = block_size;
  c.max_num_batched_tokens = budget;
  c.max_num_seqs = max_num_seqs;
  c.max_model_len = max_model_len;
  c.enable_prefix_caching = false;
  return c;
}

/// One step: schedule, sample token 7 for every sampling sequence, update. Returns the
/// output's description; checks the scheduler's invariants before and after the update.
inline std::string step(engine::Scheduler& s, int token = 7) {
  const engine::SchedulerOutput out = s.schedule();
  EXPECT_EQ(s.check_invariants(), "");
  s.update(out, std::vector<int>(size_t(out.num_sampled()), token));
  EXPECT_EQ(s.check_invariants(), "");
  return describe(out);
}

}  // namespace nanoserve::testing
