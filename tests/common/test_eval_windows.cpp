// How evaluation cuts a long document into windows: the exact windows, that every token is
// scored once against the right logits row, and the documented consequence for context.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "common/eval/perplexity.h"
#include "eval_test_tokenizers.h"

namespace nanoserve::eval {
namespace {

using nanoserve::testing::LetterTokenizer;

constexpr int kVocab = 8, kBos = 1;

// A bigram "model": the logits of a row depend only on that row's token. Its NLL under any
// context is therefore Σ -ln P(d_i | token before d_i), easy to compute independently.
float bigram_logit(int cur, int next) { return float((cur * 3 + next * 5) % 7) * 0.5f; }

double bigram_nll(int cur, int next) {  // -ln softmax(bigram_logit(cur, ·))[next], fp64
  double z = 0;
  for (int j = 0; j < kVocab; ++j) z += std::exp(double(bigram_logit(cur, j)));
  return std::log(z) - double(bigram_logit(cur, next));
}

struct Recorder {
  std::vector<std::vector<int>> windows;
  LogitsFn fn() {
    return [this](const std::vector<int>& tokens) {
      windows.push_back(tokens);
      std::vector<float> logits(tokens.size() * kVocab);
      for (size_t t = 0; t < tokens.size(); ++t) {
        for (int j = 0; j < kVocab; ++j) logits[t * kVocab + j] = bigram_logit(tokens[t], j);
      }
      return logits;
    };
  }
};

// "abcdeab" tokenizes to 3 4 5 6 7 3 4 (d0..d6).
const std::vector<int> kDoc = {3, 4, 5, 6, 7, 3, 4};

EvalResult run(int window, int stride, Recorder& rec) {
  EvalOptions opt;
  opt.window = window;
  opt.stride = stride;
  return evaluate_text("abcdeab", LetterTokenizer{}, rec.fn(), opt);
}

TEST(EvalWindows, NonOverlappingWindowsStartFromBosAndBackfillTheLast) {
  Recorder rec;
  const EvalResult r = run(4, 0, rec);  // stride 0 = window - 1 = 3
  using W = std::vector<std::vector<int>>;
  EXPECT_EQ(rec.windows, (W{{kBos, 3, 4, 5}, {kBos, 6, 7, 3}, {kBos, 7, 3, 4}}));
  EXPECT_EQ(r.windows, 3);
  EXPECT_EQ(r.tokens, 7);
}

TEST(EvalWindows, StridedWindowsScoreStrideNewTokensEach) {
  Recorder rec;
  const EvalResult r = run(4, 1, rec);
  using W = std::vector<std::vector<int>>;
  EXPECT_EQ(rec.windows, (W{{kBos, 3, 4, 5}, {kBos, 4, 5, 6}, {kBos, 5, 6, 7},
                            {kBos, 6, 7, 3}, {kBos, 7, 3, 4}}));
  EXPECT_EQ(r.tokens, 7);
}

TEST(EvalWindows, ContextCarriedIntoLaterWindowsDecidesTheNll) {
  // Unlimited context: each d_i is predicted from d_(i-1) (d0 from BOS).
  double full = bigram_nll(kBos, kDoc[0]);
  for (size_t i = 1; i < kDoc.size(); ++i) full += bigram_nll(kDoc[i - 1], kDoc[i]);
  // Non-overlapping windows of 4: d3 opens window 2 and is predicted from BOS instead of d2;
  // d6, in the backfilled last window, keeps its context.
  const double cut = full - bigram_nll(kDoc[2], kDoc[3]) + bigram_nll(kBos, kDoc[3]);
  Recorder a, b, c;
  EXPECT_NEAR(run(64, 0, a).nll, full, 1e-9) << "one window holds the whole document";
  EXPECT_NEAR(run(4, 2, b).nll, full, 1e-9) << "stride 2 leaves one token of context";
  EXPECT_NEAR(run(4, 0, c).nll, cut, 1e-9) << "stride 3 leaves none";
  EXPECT_GT(std::fabs(cut - full), 1e-3) << "the test must tell the two apart";
}

}  // namespace
}  // namespace nanoserve::eval
