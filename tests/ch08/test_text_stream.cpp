// TextStream (apps/nanoserve/server/text_stream.h): streamed text never shows a stop string
// or half a UTF-8 character, and the text sent is always a prefix of the final answer.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "apps/nanoserve/server/text_stream.h"

namespace nanoserve::server {
namespace {

// Tokens are indexes into `pieces`.
struct Pieces {
  std::vector<std::string> pieces;
  TextStream stream(std::vector<std::string> stop, std::vector<int> stop_ids = {}) const {
    return TextStream([this](int, int t) { return pieces[size_t(t)]; }, -1, std::move(stop_ids),
                      std::move(stop));
  }
};

std::vector<std::string> run(TextStream& s, const std::vector<int>& tokens, std::string* all) {
  std::vector<std::string> sent;
  for (int t : tokens) {
    sent.push_back(s.push(t));
    *all += sent.back();
  }
  *all += s.finish();
  return sent;
}

TEST(Ch08TextStream, StopStringSplitOverTokensIsHeldBackAndCut) {
  const Pieces p{{"Hello", " wor", "ld", "\n", "Bye", "\nX"}};
  TextStream s = p.stream({"\nB"});
  std::string all;
  const auto sent = run(s, {0, 1, 2, 3, 4}, &all);
  EXPECT_EQ(sent, (std::vector<std::string>{"Hello", " wor", "ld", "", ""}));
  EXPECT_EQ(all, "Hello world");
  EXPECT_EQ(s.final_text(), "Hello world");
}

TEST(Ch08TextStream, HeldBackTextThatIsNoStopStringIsSentLater) {
  const Pieces p{{"a", "\n", "\nX", "c"}};
  TextStream s = p.stream({"\nB"});
  std::string all;
  const auto sent = run(s, {0, 1, 3}, &all);
  EXPECT_EQ(sent, (std::vector<std::string>{"a", "", "\nc"}));
  EXPECT_EQ(all, "a\nc");
}

TEST(Ch08TextStream, TextEndingInAPossibleStopIsFlushedAtTheEnd) {
  const Pieces p{{"a", "EN"}};
  TextStream s = p.stream({"END"});
  std::string all;
  run(s, {0, 1}, &all);
  EXPECT_EQ(all, "aEN");  // max_tokens came first: "EN" was no stop string after all
}

TEST(Ch08TextStream, StopInsideOneTokenCutsMidPieceAndLaterTokensAddNothing) {
  const Pieces p{{"one. two", " three"}};
  TextStream s = p.stream({"."});
  std::string all;
  run(s, {0, 1}, &all);
  EXPECT_EQ(all, "one");
}

TEST(Ch08TextStream, StopTokensAddNoText) {
  const Pieces p{{"x", "<eos>"}};
  TextStream s = p.stream({}, {1});
  std::string all;
  run(s, {0, 1}, &all);
  EXPECT_EQ(all, "x");
}

TEST(Ch08TextStream, SplitUtf8CharacterWaitsForItsLastByte) {
  // "é" is C3 A9, "€" is E2 82 AC; byte tokens split them.
  const Pieces p{{"a\xC3", "\xA9", "\xE2\x82", "\xAC"}};
  TextStream s = p.stream({});
  std::string all;
  const auto sent = run(s, {0, 1, 2, 3}, &all);
  EXPECT_EQ(sent, (std::vector<std::string>{"a", "\xC3\xA9", "", "\xE2\x82\xAC"}));
  EXPECT_EQ(utf8_complete_prefix("ab\xF0\x9F\x98"), 2u);
  EXPECT_EQ(utf8_complete_prefix("ab\xF0\x9F\x98\x80"), 6u);
}

// Property: whatever the tokens and stop strings, what was sent is the final text.
TEST(Ch08TextStream, SentTextIsAlwaysTheFinalTextOnRandomInputs) {
  const Pieces p{{"a", "b", "ab", "ba", "\n", "a\n", "b\nb", "\xC3", "\xA9"}};
  uint64_t x = 12345;
  auto rnd = [&](int n) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return int((x >> 33) % uint64_t(n));
  };
  for (int trial = 0; trial < 500; ++trial) {
    std::vector<std::string> stop;
    for (int k = rnd(3); k > 0; --k) {
      std::string s;
      for (int len = 1 + rnd(3); len > 0; --len) s += "ab\n"[rnd(3)];
      stop.push_back(s);
    }
    TextStream s = p.stream(stop);
    std::vector<int> tokens;
    for (int len = rnd(12); len > 0; --len) tokens.push_back(rnd(int(p.pieces.size())));
    std::string all, text;
    run(s, tokens, &all);
    // The reference: the engine's rule — after each token, the first stop string found in
    // the text so far ends it there.
    size_t cut = std::string::npos;
    for (int t : tokens) {
      text += p.pieces[size_t(t)];
      for (const std::string& st : stop) cut = std::min(cut, text.find(st));
      if (cut != std::string::npos) break;
    }
    EXPECT_EQ(all, text.substr(0, cut)) << "trial " << trial;
  }
}

}  // namespace
}  // namespace nanoserve::server
