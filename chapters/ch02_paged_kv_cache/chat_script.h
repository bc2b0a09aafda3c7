#pragma once
/// \file
/// \brief Scripted chat sessions (`data/chats/*.txt`) for the `multiturn` scenario: one system
/// prompt shared by every session, then each session's user turns in order.
///
///     system: You are a kind storyteller ...
///     session: lily
///     user: Tell me a story about a girl named Lily and her red ball.
///     user: What did Lily do when the ball went up in the tree?

#include <cstdint>
#include <string>
#include <vector>

namespace nanoserve::ch02 {

/// \brief One scripted conversation: a name and its user turns, in order.
struct ChatSession {
  std::string name;                ///< from the `session:` line
  std::vector<std::string> turns;  ///< the `user:` lines' texts
};

/// \brief A parsed chat script.
struct ChatScript {
  std::string system;                 ///< the shared system prompt
  std::vector<ChatSession> sessions;  ///< in file order, each with at least one turn
};

/// \brief Parses the text of a chat script; `source` names it in errors. Throws `LoadError`
/// naming `source:line` for an unknown line kind, a missing or repeated `system:` line, a
/// `user:` line before any session, an empty text, or a session without turns.
ChatScript parse_chat_script(const std::string& text, const std::string& source);

/// \brief Largest chat script read: 16 MiB (the bundled one is 2 KB; every turn is
/// prefilled, so far less is practical).
inline constexpr std::uint64_t kMaxChatScriptBytes = 16ull << 20;

/// \brief Reads and parses a chat script file. Throws `LoadError` when it cannot be read, is
/// not a regular file (a directory, a FIFO) or is larger than `kMaxChatScriptBytes`.
ChatScript load_chat_script(const std::string& path);

/// \brief The bundled script, `data/chats/chats.txt`, found from the working directory or
/// the source tree. Throws `LoadError` when it is missing.
std::string default_chat_script_path();

}  // namespace nanoserve::ch02
