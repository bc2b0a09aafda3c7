// RegexSplitter (PCRE2, UTF + Unicode properties): `Split` Isolated semantics, Unicode classes,
// and the backtracking limit that turns a catastrophic pattern into an error.

#include <gtest/gtest.h>

#include "common/error.h"
#include "common/tokenizer/pre_tokenizer.h"
#include "common/tokenizer/regex_split.h"

namespace nanoserve {
namespace {

std::vector<std::string> split(const std::string& pattern, const std::string& text) {
  std::vector<std::string> out;
  RegexSplitter(pattern).split(text, out);
  return out;
}

TEST(RegexSplitter, MatchesAndGapsAreEachAPiece) {
  EXPECT_EQ(split("[0-9]+", "ab12cd345"), (std::vector<std::string>{"ab", "12", "cd", "345"}));
  EXPECT_EQ(split("x*", "abc"), (std::vector<std::string>{"abc"}));  // empty matches skipped
  EXPECT_EQ(split(R"(\p{L}+)", "日本 été"), (std::vector<std::string>{"日本", " ", "été"}));
}

TEST(RegexSplitter, Llama3PatternGroupsDigitsInThreesAndKeepsNewlines) {
  EXPECT_EQ(split(kLlama3Pattern, "I'll pay 12345!\n\n x"),
            (std::vector<std::string>{"I", "'ll", " pay", " ", "123", "45", "!\n\n", " x"}));
  EXPECT_EQ(split(kQwen2Pattern, "42"), (std::vector<std::string>{"4", "2"}));
}

TEST(RegexSplitter, CatastrophicBacktrackingIsAnError) {
  EXPECT_THROW(split("(a+)+$", std::string(40, 'a') + "b"), InvalidArgument);
}

TEST(RegexSplitter, BadPatternsAreRefusedWithPcre2sMessage) {
  EXPECT_THROW(RegexSplitter("(\\p{L"), InvalidArgument);
  EXPECT_THROW(RegexSplitter(""), InvalidArgument);
  EXPECT_THROW(RegexSplitter(std::string(5000, 'a')), InvalidArgument);
  EXPECT_THROW(gguf_pre_tokenizer("falcon"), InvalidArgument);
}

}  // namespace
}  // namespace nanoserve
