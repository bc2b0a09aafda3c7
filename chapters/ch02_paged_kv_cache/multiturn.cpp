#include "chapters/ch02_paged_kv_cache/multiturn.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>

#include "common/format_bytes.h"
#include "common/harness/clocks.h"
#include "common/engine/decode/paged_decoder.h"
#include "common/error.h"
#include "common/generation/generate.h"

namespace nanoserve::ch02 {
namespace {

// The chat template: plain text the story models can continue. Each piece is encoded on its
// own and appended, so a conversation's tokens only ever grow at the end — the property prefix
// caching needs (re-encoding the whole text could merge tokens across a turn boundary).
std::string question_text(const std::string& user) { return "\nQ: " + user + "\nA:"; }

struct SessionState {
  const ChatSession* session = nullptr;
  std::vector<int> conversation;  // system prompt, then every question and reply so far
  bool stopped = false;
};

}  // namespace

MultiturnRun run_multiturn(const engine::DeviceModel& model, const Tokenizer& tokenizer,
                           const ChatScript& script, const MultiturnConfig& c,
                           bool prefix_caching) {
  if (c.block_size < 1 || c.num_blocks < 1 || c.max_new_tokens < 1 || c.max_turns < 0 ||
      c.max_sessions < 0) {
    throw InvalidArgument("multiturn: block size, blocks and new tokens must be >= 1, turn and "
                          "session limits >= 0");
  }
  engine::KVCacheManager manager(c.num_blocks, c.block_size, prefix_caching);
  // A sequence never holds more than the pool: that, not the context a file may claim (2^20
  // positions), sizes the cache's tables and the runner's rows.
  const int positions = static_cast<int>(std::min<std::int64_t>(
      model.config().max_seq_len, std::int64_t(c.num_blocks) * c.block_size));
  engine::PagedKVCache cache(model.config(), c.kv_dtype.value_or(model.dtype()),
                             manager.pool().num_blocks(),
                             manager.block_size(), positions);
  engine::ModelRunner runner(model, {cache.max_seq_len(), 1});
  const std::vector<int> system = tokenizer.encode(script.system, /*add_bos=*/true, false);
  std::vector<SessionState> sessions;
  for (const ChatSession& s : script.sessions) {
    if (c.max_sessions > 0 && int(sessions.size()) == c.max_sessions) break;
    sessions.push_back({&s, system, false});
  }
  std::size_t most_turns = 0;
  for (const SessionState& s : sessions) most_turns = std::max(most_turns, s.session->turns.size());
  if (c.max_turns > 0) most_turns = std::min(most_turns, std::size_t(c.max_turns));

  GenerateOptions opt;
  opt.max_new_tokens = c.max_new_tokens;
  opt.sampling.temperature = 0.0f;
  opt.stop_tokens = {tokenizer.eos_id(), tokenizer.bos_id()};
  MultiturnRun run;
  run.prefix_caching = prefix_caching;
  const double cpu0 = harness::process_cpu_seconds(), wall0 = harness::wall_seconds();
  std::int64_t next_id = 0;
  for (std::size_t t = 0; t < most_turns; ++t) {
    for (SessionState& s : sessions) {
      if (s.stopped || t >= s.session->turns.size()) continue;
      const std::vector<int> question =
          tokenizer.encode(question_text(s.session->turns[t]), false, false);
      std::vector<int> prompt = s.conversation;
      prompt.insert(prompt.end(), question.begin(), question.end());
      if (int(prompt.size()) + c.max_new_tokens > cache.max_seq_len()) {
        s.stopped = true;
        run.notes.push_back("session '" + s.session->name + "' stopped before turn " +
                            std::to_string(t + 1) + ": its " + std::to_string(prompt.size()) +
                            "-token prompt plus " + std::to_string(c.max_new_tokens) +
                            " new tokens exceeds the context of " +
                            std::to_string(cache.max_seq_len()));
        continue;
      }
      // A new request per turn: its blocks go back to the pool when `backend` is destroyed,
      // and with prefix caching the full ones stay cached for the next turn.
      engine::PagedDecoder backend(runner, manager, cache, next_id++);
      const GenerateResult r = generate(backend, prompt, opt);
      TurnRecord rec{s.session->name, int(t) + 1, int(prompt.size()), int(backend.rows_cached()),
                     int(prompt.size() - backend.rows_cached()),
                     {r.tokens.begin() + r.prompt_tokens, r.tokens.end()}};
      if (r.stop == StopReason::kStopToken) rec.reply.pop_back();
      run.rows_computed += backend.rows_computed();
      s.conversation = prompt;
      s.conversation.insert(s.conversation.end(), rec.reply.begin(), rec.reply.end());
      run.turns.push_back(std::move(rec));
    }
  }
  run.cpu_seconds = harness::process_cpu_seconds() - cpu0;
  run.wall_seconds = harness::wall_seconds() - wall0;
  run.metrics = manager.metrics();
  return run;
}

bool same_replies(const MultiturnRun& a, const MultiturnRun& b) {
  if (a.turns.size() != b.turns.size()) return false;
  for (std::size_t i = 0; i < a.turns.size(); ++i) {
    if (a.turns[i].session != b.turns[i].session || a.turns[i].turn != b.turns[i].turn ||
        a.turns[i].reply != b.turns[i].reply) {
      return false;
    }
  }
  return true;
}

bool print_multiturn(const MultiturnRun& off, const MultiturnRun& on, const MultiturnConfig& c,
                     nlohmann::json& records) {
  int sessions = 0, last_turn = 0;
  for (const TurnRecord& t : on.turns) {
    sessions += t.turn == 1;
    last_turn = std::max(last_turn, t.turn);
  }
  std::printf("\n== multiturn: %d chat sessions sharing a system prompt, %zu turns, %d new tokens "
              "per turn, block %d ==\n", sessions, on.turns.size(), c.max_new_tokens, c.block_size);
  std::printf("  %4s %8s | %-26s | %-26s\n", "turn", "prompt", "prefix caching off",
              "prefix caching on");
  std::printf("  %4s %8s | %12s %13s | %12s %13s\n", "", "tokens", "computed", "from cache",
              "computed", "from cache");
  for (int turn = 1; turn <= last_turn; ++turn) {
    long long prompt = 0, comp[2] = {0, 0}, hit[2] = {0, 0};
    for (int m = 0; m < 2; ++m) {
      for (const TurnRecord& t : (m == 0 ? off : on).turns) {
        if (t.turn != turn) continue;
        if (m == 1) prompt += t.prompt_tokens;
        comp[m] += t.computed_tokens;
        hit[m] += t.cached_tokens;
      }
    }
    std::printf("  %4d %8lld | %12lld %13lld | %12lld %13lld\n", turn, prompt, comp[0], hit[0],
                comp[1], hit[1]);
  }
  std::printf("\n  %-18s %10s %10s %9s %8s %10s %9s %9s\n", "mode", "computed", "skipped",
              "block hit", "evicted", "rows", "CPU s", "wall s");
  for (const MultiturnRun* r : {&off, &on}) {
    const engine::KVCacheMetrics& m = r->metrics;
    const char* mode = r->prefix_caching ? "prefix caching on" : "prefix caching off";
    std::printf("  %-18s %10lld %10lld %8.1f%% %8lld %10lld %9.2f %9.2f\n", mode,
                m.prefill_tokens_computed, m.prefill_tokens_skipped, 100.0 * m.hit_rate(),
                m.evictions, r->rows_computed, r->cpu_seconds, r->wall_seconds);
    records.push_back({{"table", "multiturn_summary"}, {"prefix_caching", r->prefix_caching},
                       {"block_size", c.block_size}, {"num_blocks", c.num_blocks},
                       {"max_new_tokens", c.max_new_tokens}, {"turns", r->turns.size()},
                       {"prefill_tokens_computed", m.prefill_tokens_computed},
                       {"prefill_tokens_skipped", m.prefill_tokens_skipped},
                       {"block_queries", m.queries}, {"block_hits", m.hits},
                       {"hit_rate", m.hit_rate()}, {"evictions", m.evictions},
                       {"rows_computed", r->rows_computed}, {"cpu_seconds", r->cpu_seconds},
                       {"wall_seconds", r->wall_seconds}});
    for (const TurnRecord& t : r->turns) {
      records.push_back({{"table", "multiturn_turn"}, {"prefix_caching", r->prefix_caching},
                         {"session", t.session}, {"turn", t.turn},
                         {"prompt_tokens", t.prompt_tokens}, {"cached_tokens", t.cached_tokens},
                         {"computed_tokens", t.computed_tokens}, {"reply", t.reply}});
    }
  }
  const long long total = on.metrics.prefill_tokens_computed + on.metrics.prefill_tokens_skipped;
  std::printf("  with prefix caching %.1f%% of the prompt tokens were not recomputed; CPU time "
              "%.2fx\n", total > 0 ? 100.0 * on.metrics.prefill_tokens_skipped / total : 0.0,
              on.cpu_seconds > 0 ? off.cpu_seconds / on.cpu_seconds : 0.0);
  for (const std::string& note : on.notes) std::printf("  note: %s\n", note.c_str());
  const bool same = same_replies(off, on);
  std::printf("  replies identical with and without prefix caching (%zu turns): %s\n",
              on.turns.size(), same ? "yes" : "NO");
  records.push_back({{"table", "multiturn_check"}, {"identical", same}, {"turns", on.turns.size()}});
  return same;
}

}  // namespace nanoserve::ch02
