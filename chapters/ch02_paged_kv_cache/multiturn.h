#pragma once
/// \file
/// \brief The `multiturn` scenario: scripted chat sessions run through the kernels over a paged
/// KV cache, prefix caching off and on. Every turn is a new request whose prompt is the whole
/// conversation so far plus the new question, so with prefix caching only the new tokens are
/// computed:
///
///     turn 1   [system ........][Q1 A:]                      computed: all
///     turn 2   [system ........][Q1 A: reply1][Q2 A:]        cached: the full blocks of turn 1
///     turn 3   [system ........][Q1 A: reply1][Q2 A: reply2][Q3 A:]
///     session 2, turn 1 [system ........][Q1' A:]            cached: the system prompt's blocks
///
/// Turns of different sessions are interleaved (turn 1 of every session, then turn 2, …), as
/// users of a server take turns, so each session's blocks must survive the others' requests
/// in the pool (freed blocks stay cached until the LRU evicts them).

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chapters/ch02_paged_kv_cache/chat_script.h"
#include "common/engine/kv/kv_cache_manager.h"
#include "common/engine/model/device_model.h"
#include "common/tokenizer/tokenizer.h"
#include "kernels/dtype.cuh"

namespace nanoserve::ch02 {

/// \brief How the sessions are run.
struct MultiturnConfig {
  int block_size = 16;      ///< positions per KV block
  int num_blocks = 1024;    ///< blocks in the pool
  int max_new_tokens = 8;   ///< greedy tokens generated per turn (fewer at an end-of-story token)
  int max_turns = 0;        ///< turns per session to run (0 = all)
  int max_sessions = 0;     ///< sessions to run (0 = all)
  std::optional<DType> kv_dtype;  ///< KV cache storage type; unset = the model's
};

/// \brief One turn of one session.
struct TurnRecord {
  std::string session;     ///< session name
  int turn = 0;            ///< 1-based turn number
  int prompt_tokens = 0;   ///< the conversation so far plus the new question
  int cached_tokens = 0;   ///< prompt tokens whose KV came from the prefix cache
  int computed_tokens = 0; ///< prompt tokens computed (prompt − cached)
  std::vector<int> reply;  ///< generated tokens (an end token is not kept)
};

/// \brief All turns of one mode.
struct MultiturnRun {
  bool prefix_caching = false;     ///< the mode
  std::vector<TurnRecord> turns;   ///< in the order they ran
  engine::KVCacheMetrics metrics;          ///< the manager's counters at the end
  long long rows_computed = 0;     ///< token rows through the model (prefill and decode)
  double cpu_seconds = 0;          ///< process CPU time of the run
  double wall_seconds = 0;         ///< wall time of the run
  std::vector<std::string> notes;  ///< sessions stopped early because the context was full
};

/// \brief Runs `script` on `model` (greedy, so both modes must produce the same replies).
/// A session stops before a turn whose prompt plus `max_new_tokens` would not fit the model's
/// context (said in `notes`). Throws `InvalidArgument` for bad sizes and whatever the engine
/// throws (`BlockPoolExhausted` if one request does not fit the pool).
MultiturnRun run_multiturn(const engine::DeviceModel& model, const Tokenizer& tokenizer,
                           const ChatScript& script, const MultiturnConfig& config,
                           bool prefix_caching);

/// \brief Whether both runs produced the same replies for the same turns.
bool same_replies(const MultiturnRun& a, const MultiturnRun& b);

/// \brief Prints the per-turn table (turn number summed over sessions), the totals of both
/// modes and whether their replies are identical; appends the records. Returns that equality.
bool print_multiturn(const MultiturnRun& off, const MultiturnRun& on,
                     const MultiturnConfig& config, nlohmann::json& records);

}  // namespace nanoserve::ch02
