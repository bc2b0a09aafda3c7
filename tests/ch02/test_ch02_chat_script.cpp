// The chat scripts of the `multiturn` scenario: the bundled file and the parser's errors.
#include <gtest/gtest.h>

#include "chapters/ch02_paged_kv_cache/chat_script.h"
#include "common/error.h"

namespace nanoserve::ch02 {
namespace {

TEST(Ch02ChatScript, BundledScriptHasSeveralLongSessions) {
  const ChatScript s = load_chat_script(default_chat_script_path());
  EXPECT_FALSE(s.system.empty());
  EXPECT_GE(s.sessions.size(), 3u);
  for (const ChatSession& session : s.sessions) {
    EXPECT_GE(session.turns.size(), 10u) << session.name;
  }
}

TEST(Ch02ChatScript, ParsesSystemSessionsAndTurnsSkippingComments) {
  const ChatScript s = parse_chat_script(
      "# a comment\nsystem: Be kind.\n\nsession: a\nuser: Hi there.\nuser:  Why? \n"
      "session: b\nuser: Hello.\n", "t.txt");
  EXPECT_EQ(s.system, "Be kind.");
  ASSERT_EQ(s.sessions.size(), 2u);
  EXPECT_EQ(s.sessions[0].name, "a");
  EXPECT_EQ(s.sessions[0].turns, (std::vector<std::string>{"Hi there.", "Why?"}));
  EXPECT_EQ(s.sessions[1].turns, (std::vector<std::string>{"Hello."}));
}

// Each malformed script fails with a LoadError whose message names the file and line.
TEST(Ch02ChatScript, MalformedScriptsNameTheLine) {
  const struct {
    const char* text;
    const char* where;
  } cases[] = {
      {"system: x\nsession: a\nassistant: no\n", "t.txt:3"},
      {"system: x\nuser: before a session\n", "t.txt:2"},
      {"system: x\nsystem: y\n", "t.txt:2"},
      {"system: x\nsession: a\nsession: b\nuser: u\n", "t.txt:3"},
      {"system: x\nsession: a\nuser:\n", "t.txt:3"},
      {"session: a\nuser: u\n", "t.txt: system"},
      {"system: x\nsession: a\n", "t.txt: session"},
  };
  for (const auto& c : cases) {
    try {
      parse_chat_script(c.text, "t.txt");
      ADD_FAILURE() << "accepted: " << c.text;
    } catch (const LoadError& e) {
      EXPECT_NE(std::string(e.what()).find(c.where), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(load_chat_script("/nonexistent/chats.txt"), LoadError);
}

}  // namespace
}  // namespace nanoserve::ch02
