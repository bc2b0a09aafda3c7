// libFuzzer target: the chat scripts of chapter 2's multiturn scenario (data/chats/*.txt):
// `system:`, `session:` and `user:` lines. Only nanoserve::Error may escape, and a script that
// parses has a system prompt and sessions that each have turns.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "chapters/ch02_paged_kv_cache/chat_script.h"
#include "common/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const nanoserve::ch02::ChatScript s = nanoserve::ch02::parse_chat_script(text, "fuzz.txt");
    bool ok = !s.system.empty() && !s.sessions.empty();
    for (const nanoserve::ch02::ChatSession& session : s.sessions) {
      ok = ok && !session.name.empty() && !session.turns.empty();
      for (const std::string& turn : session.turns) ok = ok && !turn.empty();
    }
    if (!ok) {
      std::fprintf(stderr, "fuzz_chat_script: a parsed script breaks its invariants\n");
      __builtin_trap();
    }
  } catch (const nanoserve::Error&) {
  }
  return 0;
}
