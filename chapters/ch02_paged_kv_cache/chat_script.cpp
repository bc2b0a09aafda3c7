#include "chapters/ch02_paged_kv_cache/chat_script.h"

#include <filesystem>
#include <sstream>

#include "common/error.h"
#include "common/io/input_file.h"

namespace nanoserve::ch02 {
namespace {

std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t\r") - first + 1);
}

}  // namespace

ChatScript parse_chat_script(const std::string& text, const std::string& source) {
  ChatScript script;
  bool have_system = false;
  std::istringstream in(text);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const std::string where = source + ":" + std::to_string(number);
    const std::string t = trim(line);
    if (t.empty() || t[0] == '#') continue;
    const auto colon = t.find(':');
    const std::string kind = colon == std::string::npos ? t : t.substr(0, colon);
    const std::string value = colon == std::string::npos ? "" : trim(t.substr(colon + 1));
    if (kind != "system" && kind != "session" && kind != "user") {
      throw LoadError(where, "line", "expected 'system:', 'session:' or 'user:', got '" +
                                         t.substr(0, 40) + "'");
    }
    if (value.empty()) throw LoadError(where, kind, "empty text");
    if (kind == "system") {
      if (have_system) throw LoadError(where, kind, "a second system prompt (only one is shared)");
      if (!script.sessions.empty()) throw LoadError(where, kind, "must come before the sessions");
      script.system = value;
      have_system = true;
    } else if (kind == "session") {
      if (!script.sessions.empty() && script.sessions.back().turns.empty()) {
        throw LoadError(where, kind, "session '" + script.sessions.back().name + "' has no turns");
      }
      script.sessions.push_back({value, {}});
    } else {
      if (script.sessions.empty()) throw LoadError(where, kind, "a user turn before any 'session:'");
      script.sessions.back().turns.push_back(value);
    }
  }
  if (!have_system) throw LoadError(source, "system", "no 'system:' line");
  if (script.sessions.empty()) throw LoadError(source, "session", "no sessions");
  if (script.sessions.back().turns.empty()) {
    throw LoadError(source, "session", "session '" + script.sessions.back().name + "' has no turns");
  }
  return script;
}

ChatScript load_chat_script(const std::string& path) {
  return parse_chat_script(read_input_file(path, "chat script", kMaxChatScriptBytes), path);
}

std::string default_chat_script_path() {
  const std::string relative = "data/chats/chats.txt";
  if (std::filesystem::exists(relative)) return relative;
#ifdef NANOSERVE_SOURCE_DIR
  const std::string in_tree = std::string(NANOSERVE_SOURCE_DIR) + "/" + relative;
  if (std::filesystem::exists(in_tree)) return in_tree;
#endif
  throw LoadError(relative, "file", "the bundled chat script was not found (pass --chats FILE)");
}

}  // namespace nanoserve::ch02
