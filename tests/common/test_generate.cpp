#include <gtest/gtest.h>

#include "common/error.h"
#include "common/generation/generate.h"
#include "common/loaders/synthetic_model.h"
#include "common/oracle/oracle_decoder.h"

namespace nanoserve {
namespace {

// A backend whose logits always favour `(last token + 1) % vocab`, recording every call, so
// the loop's bookkeeping (positions, stop rules) can be checked exactly.
class CountingDecoder final : public Decoder {
 public:
  CountingDecoder(int vocab, int context) : vocab_(vocab), context_(context) {}
  void reset() override { calls.clear(); }
  std::vector<float> forward(const std::vector<int>& tokens, int start_pos) override {
    calls.push_back({tokens, start_pos});
    std::vector<float> logits(vocab_, 0.0f);
    logits[(tokens.back() + 1) % vocab_] = 10.0f;
    return logits;
  }
  int vocab_size() const override { return vocab_; }
  int max_seq_len() const override { return context_; }
  std::string device_name() const override { return "counting"; }

  struct Call {
    std::vector<int> tokens;
    int start_pos;
  };
  std::vector<Call> calls;

 private:
  int vocab_, context_;
};

GenerateOptions greedy(int n) {
  GenerateOptions o;
  o.max_new_tokens = n;
  o.sampling.temperature = 0.0f;
  return o;
}

TEST(Generate, PrefillsOnceThenFeedsEachTokenBackAtItsPosition) {
  CountingDecoder b(16, 64);
  const GenerateResult r = generate(b, {1, 5, 6}, greedy(3));
  EXPECT_EQ(r.tokens, (std::vector<int>{1, 5, 6, 7, 8, 9}));
  EXPECT_EQ(r.prompt_tokens, 3);
  EXPECT_EQ(r.generated(), 3);
  EXPECT_EQ(r.stop, StopReason::kMaxTokens);
  ASSERT_EQ(b.calls.size(), 3u);  // prefill + 2 decodes; the last token is never fed back
  EXPECT_EQ(b.calls[0].tokens, (std::vector<int>{1, 5, 6}));
  EXPECT_EQ(b.calls[0].start_pos, 0);
  EXPECT_EQ(b.calls[1].tokens, (std::vector<int>{7}));
  EXPECT_EQ(b.calls[1].start_pos, 3);
  EXPECT_EQ(b.calls[2].start_pos, 4);
}

TEST(Generate, StopsAtAStopTokenAndKeepsIt) {
  CountingDecoder b(16, 64);
  GenerateOptions o = greedy(10);
  o.stop_tokens = {9};
  const GenerateResult r = generate(b, {1, 7}, o);
  EXPECT_EQ(r.tokens, (std::vector<int>{1, 7, 8, 9}));
  EXPECT_EQ(r.stop, StopReason::kStopToken);
}

TEST(Generate, StopsWhenTheContextIsFull) {
  CountingDecoder b(16, 5);
  const GenerateResult r = generate(b, {1, 2}, greedy(100));
  EXPECT_EQ(r.tokens.size(), 5u);  // positions 0..4: the context, exactly
  EXPECT_EQ(r.stop, StopReason::kContext);
  for (const auto& c : b.calls) EXPECT_LT(c.start_pos + int(c.tokens.size()), 6);
}

TEST(Generate, ZeroStepsReturnsThePromptWithoutRunningTheModel) {
  CountingDecoder b(16, 64);
  const GenerateResult r = generate(b, {1, 2, 3}, greedy(0));
  EXPECT_EQ(r.tokens, (std::vector<int>{1, 2, 3}));
  EXPECT_TRUE(b.calls.empty());
}

TEST(Generate, APromptThatIsOnlyBosGenerates) {
  CountingDecoder b(16, 64);
  EXPECT_EQ(generate(b, {1}, greedy(2)).tokens, (std::vector<int>{1, 2, 3}));
}

TEST(Generate, RejectsEmptyTooLongAndOutOfVocabularyPrompts) {
  CountingDecoder b(16, 4);
  EXPECT_THROW(generate(b, {}, greedy(1)), InvalidArgument);
  EXPECT_THROW(generate(b, {1, 2, 3, 4, 5}, greedy(1)), InvalidArgument);
  EXPECT_THROW(generate(b, {1, 16}, greedy(1)), InvalidArgument);
  EXPECT_THROW(generate(b, {1, -1}, greedy(1)), InvalidArgument);
  EXPECT_THROW(generate(b, {1}, greedy(-1)), InvalidArgument);
  // A prompt that fills the context exactly still yields the one token its logits predict.
  EXPECT_EQ(generate(b, {1, 2, 3, 4}, greedy(5)).tokens.size(), 5u);
}

TEST(Generate, SeededSamplingIsReproducibleAndSeedDependent) {
  const Model m = make_synthetic_model("synthetic:tiny");
  oracle::OracleDecoder b(m);
  GenerateOptions o;
  o.max_new_tokens = 24;
  o.sampling.temperature = 1.0f;
  o.sampling.seed = 7;
  const std::vector<int> a = generate(b, {1, 100, 200}, o).tokens;
  EXPECT_EQ(a, generate(b, {1, 100, 200}, o).tokens);
  o.sampling.seed = 8;
  EXPECT_NE(a, generate(b, {1, 100, 200}, o).tokens);
}

TEST(Generate, StreamsEveryGeneratedTokenInOrder) {
  CountingDecoder b(16, 64);
  GenerateOptions o = greedy(4);
  std::vector<int> streamed;
  o.on_token = [&](int t) { streamed.push_back(t); };
  const GenerateResult r = generate(b, {3}, o);
  EXPECT_EQ(streamed, std::vector<int>(r.tokens.begin() + 1, r.tokens.end()));
}

}  // namespace
}  // namespace nanoserve
