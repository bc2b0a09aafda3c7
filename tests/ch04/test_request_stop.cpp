// Request: the stop rules applied after every sampled token, and their order.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/engine/serve/request.h"
#include "common/error.h"

namespace nanoserve {
namespace {

/// Token t reads as the letter 'a' + t (a toy vocabulary of single letters).
std::string letter(int /*prev*/, int token) { return std::string(1, char('a' + token)); }

engine::Request fresh(int prompt_len, int max_tokens) {
  return engine::make_request(1, std::vector<int>(size_t(prompt_len), 0), max_tokens);
}

TEST(Ch04Request, StopTokenEndsWithStopAndStaysInTheOutput) {
  engine::Request r = fresh(3, 10);
  r.stop_token_ids = {2};
  EXPECT_FALSE(engine::append_token(r, 5, 1.0, 64, {}));
  EXPECT_TRUE(engine::append_token(r, 2, 2.0, 64, {}));
  EXPECT_EQ(r.output_tokens(), (std::vector<int>{5, 2}));
  EXPECT_EQ(r.finish_reason, engine::FinishReason::kStop);
  EXPECT_EQ(r.finish_detail, "stop token 2");
  EXPECT_EQ(r.finished_s, 2.0);
  EXPECT_EQ(r.token_times_s, (std::vector<double>{1.0, 2.0}));
}

TEST(Ch04Request, StopTokenWinsOverMaxTokensOnTheSameToken) {
  engine::Request r = fresh(3, 1);
  r.stop_token_ids = {2};
  EXPECT_TRUE(engine::append_token(r, 2, 0, 64, {}));
  EXPECT_EQ(r.finish_reason, engine::FinishReason::kStop);
}

TEST(Ch04Request, MaxTokensEndsWithLength) {
  engine::Request r = fresh(3, 2);
  EXPECT_FALSE(engine::append_token(r, 5, 0, 64, {}));
  EXPECT_TRUE(engine::append_token(r, 6, 0, 64, {}));
  EXPECT_EQ(r.finish_reason, engine::FinishReason::kLength);
  EXPECT_EQ(r.finish_detail, "max_tokens 2");
}

TEST(Ch04Request, ContextBoundsPromptPlusOutput) {
  engine::Request r = fresh(5, 100);
  EXPECT_FALSE(engine::append_token(r, 1, 0, 7, {}));  // 6 tokens
  EXPECT_TRUE(engine::append_token(r, 1, 0, 7, {}));   // 7 = max_model_len
  EXPECT_EQ(r.finish_detail, "context of 7 tokens");
  // A prompt that fills the context still gets its one token (as `generate` does).
  engine::Request full = fresh(7, 100);
  EXPECT_TRUE(engine::append_token(full, 1, 0, 7, {}));
  EXPECT_EQ(full.num_output_tokens(), 1);
}

TEST(Ch04Request, StopStringSpanningTokensIsCutFromTheText) {
  engine::Request r = fresh(2, 10);
  r.stop_strings = {"cd", "zz"};
  EXPECT_FALSE(engine::append_token(r, 1, 0, 64, letter));   // "b"
  EXPECT_FALSE(engine::append_token(r, 2, 0, 64, letter));   // "bc"
  EXPECT_TRUE(engine::append_token(r, 3, 0, 64, letter));    // "bcd": "cd" ends here
  EXPECT_EQ(r.output_text, "b");
  EXPECT_EQ(r.finish_reason, engine::FinishReason::kStop);
  EXPECT_EQ(r.finish_detail, "stop string \"cd\"");
  EXPECT_EQ(r.num_output_tokens(), 3);  // the tokens are kept; only the text is cut
}

TEST(Ch04Request, StopStringsAreMatchedOnlyInGeneratedText) {
  engine::Request r = fresh(2, 10);  // prompt tokens 0, 0 would read "aa"
  r.stop_strings = {"aa"};
  EXPECT_FALSE(engine::append_token(r, 0, 0, 64, letter));  // "a": the prompt's letters do not count
  EXPECT_TRUE(engine::append_token(r, 0, 0, 64, letter));   // "aa"
  EXPECT_EQ(r.output_text, "");
}

TEST(Ch04Request, StopStringsWithoutADetokenizerAreAnError) {
  engine::Request r = fresh(2, 10);
  r.stop_strings = {"x"};
  EXPECT_THROW(engine::append_token(r, 0, 0, 64, {}), InvalidArgument);
}

TEST(Ch04Request, ValidateNewNamesTheBadField) {
  engine::Request r = fresh(3, 4);
  EXPECT_NO_THROW(r.validate_new());
  r.prompt_len = 2;
  EXPECT_THROW(r.validate_new(), InvalidArgument);
  r = fresh(3, 4);
  r.seq.num_computed_tokens = 1;
  EXPECT_THROW(r.validate_new(), InvalidArgument);
  r = fresh(3, 4);
  r.stop_strings = {""};
  try {
    r.validate_new();
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("stop_strings"), std::string::npos);
  }
}

}  // namespace
}  // namespace nanoserve
