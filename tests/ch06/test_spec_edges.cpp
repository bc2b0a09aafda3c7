// Edge cases of the speculative loop: γ beyond the token budget or the context, a stop token
// among accepted drafts, a draft with another vocabulary, an identical draft, bad arguments.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "common/error.h"
#include "common/speculative/draft_model_proposer.h"
#include "common/speculative/ngram_proposer.h"
#include "common/speculative/spec_decoder.h"
#include "spec_test_support.h"

namespace nanoserve::speculative {
namespace {

using testing::SpecFixtureModel;

/// Speculative greedy/sampled run of `m` with the draft `label` at γ on a target holding
/// `capacity` positions (0 = the model's context); `on_round` observes each round.
SpecResult run(const SpecFixtureModel& m, const std::string& label, int gamma,
               const GenerateOptions& options, int capacity = 0,
               std::function<void(const SpecRound&)> on_round = {},
               const std::vector<int>* prompt = nullptr) {
  OracleRollbackDecoder target(m.target, capacity), draft(m.drafts.at(label));
  DraftModelProposer proposer(draft, m.target.config.vocab_size);
  SpecOptions spec;
  spec.gamma = gamma;
  spec.on_round = std::move(on_round);
  return SpecDecoder(target, proposer, spec).generate(prompt ? *prompt : m.prompt, options);
}

TEST(Ch06SpecEdges, GammaLargerThanTheRemainingBudgetIsClipped) {
  const SpecFixtureModel& m = testing::synthetic_tiny();
  for (int budget : {1, 2, 3, 7}) {
    SCOPED_TRACE(budget);
    const GenerateOptions options = testing::greedy_options(budget);
    int produced = 0;
    const SpecResult r = run(m, "identical", 8, options, 0, [&](const SpecRound& round) {
      EXPECT_LE(round.gamma, budget - produced - 1);  // room for the bonus token too
      produced += int(round.appended.size());
    });
    EXPECT_EQ(r.generation.tokens, testing::plain_generate(m.target, m.prompt, options).tokens);
    EXPECT_EQ(r.generation.generated(), budget);
    EXPECT_EQ(r.generation.stop, StopReason::kMaxTokens);
  }
}

TEST(Ch06SpecEdges, GammaLargerThanTheRemainingContextStopsWherePlainDecodingStops) {
  const SpecFixtureModel& m = testing::synthetic_tiny();
  const GenerateOptions options = testing::greedy_options(100);
  for (int capacity : {int(m.prompt.size()), int(m.prompt.size()) + 1, 13, 20}) {
    SCOPED_TRACE(capacity);
    const GenerateResult plain = testing::plain_generate(m.target, m.prompt, options, capacity);
    for (const char* label : {"identical", "unrelated"}) {
      const SpecResult r = run(m, label, 8, options, capacity);
      EXPECT_EQ(r.generation.tokens, plain.tokens) << label;
      EXPECT_EQ(r.generation.stop, StopReason::kContext) << label;
    }
  }
}

TEST(Ch06SpecEdges, StopTokenAmongAcceptedDraftsEndsTheOutputThere) {
  const SpecFixtureModel& m = testing::synthetic_tiny();
  const GenerateResult free_run =
      testing::plain_generate(m.target, m.prompt, testing::greedy_options(30));
  // The identical draft at γ = 8 emits 9 tokens a round, the 9th a bonus: pick a token that
  // first appears at an output index j > 9 with j % 9 != 8, so it is a kept draft of a round.
  int stop = -1;
  for (size_t j = 10; j < 30 && stop < 0; ++j) {
    const auto out = free_run.tokens.begin() + free_run.prompt_tokens;
    const bool first = std::find(out, out + long(j), out[long(j)]) == out + long(j);
    if (j % 9 != 8 && first) stop = out[long(j)];
  }
  ASSERT_GE(stop, 0) << "no suitable stop token in the first 30 tokens";
  const GenerateOptions options = testing::greedy_options(30, {stop});
  const GenerateResult plain = testing::plain_generate(m.target, m.prompt, options);
  ASSERT_EQ(plain.stop, StopReason::kStopToken);
  bool stop_was_a_kept_draft = false;
  OracleRollbackDecoder target(m.target), draft(m.target);
  DraftModelProposer proposer(draft, m.target.config.vocab_size);
  SpecOptions spec;
  spec.gamma = 8;
  spec.on_round = [&](const SpecRound& round) {
    const auto at = std::find(round.appended.begin(), round.appended.end(), stop);
    if (at != round.appended.end() && at - round.appended.begin() < round.accepted) {
      stop_was_a_kept_draft = true;
      EXPECT_EQ(at + 1, round.appended.end()) << "tokens after the stop token were emitted";
    }
  };
  const SpecResult r = SpecDecoder(target, proposer, spec).generate(m.prompt, options);
  EXPECT_TRUE(stop_was_a_kept_draft);
  EXPECT_EQ(r.generation.tokens, plain.tokens);
  EXPECT_EQ(r.generation.stop, StopReason::kStopToken);
  EXPECT_EQ(target.length(), int(r.generation.tokens.size()) - 1);  // later drafts forgotten
}

TEST(Ch06SpecEdges, DraftWithAnotherVocabularyIsRefused) {
  const SpecFixtureModel& m = testing::synthetic_tiny();
  ModelConfig c = m.target.config;
  c.vocab_size = 256;
  const Model other = make_synthetic_model(c, 5);
  OracleRollbackDecoder target(m.target), draft(other);
  try {
    DraftModelProposer proposer(draft, m.target.config.vocab_size);
    FAIL() << "a 256-token draft for a 512-token target was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("256"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("512"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("tokenizer"), std::string::npos) << e.what();
  }
  // A proposer that skipped that check is refused by the decoder itself.
  struct Mismatched final : Proposer {
    void reset() override {}
    Proposal propose(const std::vector<int>&, int, const SamplingParams&) override { return {}; }
    int vocab_size() const override { return 256; }
    std::string name() const override { return "mismatched"; }
  } mismatched;
  EXPECT_THROW(SpecDecoder(target, mismatched), InvalidArgument);
}

TEST(Ch06SpecEdges, IdenticalDraftHasEveryTokenAccepted) {
  const SpecFixtureModel& m = testing::synthetic_tiny();
  for (const SamplingParams params :
       {SamplingParams{0.0f, 0, 1.0f, 0.0f, 0}, SamplingParams{1.0f, 0, 1.0f, 0.0f, 11},
        SamplingParams{0.7f, 50, 0.9f, 0.05f, 12}}) {
    SCOPED_TRACE(params.temperature);
    GenerateOptions options;
    options.max_new_tokens = 45;
    options.sampling = params;
    const SpecResult r = run(m, "identical", 4, options);
    EXPECT_EQ(r.stats.accepted, r.stats.proposed);
    EXPECT_EQ(r.stats.rejected, 0);
    EXPECT_DOUBLE_EQ(r.stats.acceptance_rate(), 1.0);
    EXPECT_DOUBLE_EQ(r.stats.tokens_per_target_forward(), 5.0);  // 45 tokens in 9 rounds
  }
}

TEST(Ch06SpecEdges, BadArgumentsAreRefused) {
  const SpecFixtureModel& m = testing::synthetic_tiny();
  OracleRollbackDecoder target(m.target);
  NgramProposer ngram;
  SpecOptions zero;
  zero.gamma = 0;
  EXPECT_THROW(SpecDecoder(target, ngram, zero), InvalidArgument);
  SpecOptions inverted;
  inverted.gamma = 4;
  inverted.adaptive = true;
  inverted.max_gamma = 2;
  EXPECT_THROW(SpecDecoder(target, ngram, inverted), InvalidArgument);
  SpecDecoder decoder(target, ngram);
  EXPECT_THROW(decoder.generate({}, testing::greedy_options(4)), InvalidArgument);
  EXPECT_THROW(decoder.generate({1, 512}, testing::greedy_options(4)), InvalidArgument);
  EXPECT_THROW(decoder.generate(m.prompt, testing::greedy_options(-1)), InvalidArgument);
  EXPECT_THROW(first_layers(m.target, 0), InvalidArgument);
  EXPECT_THROW(first_layers(m.target, 5), InvalidArgument);
  EXPECT_THROW(NgramProposer(2, 3), InvalidArgument);
  EXPECT_EQ(decoder.generate(m.prompt, testing::greedy_options(0)).generation.tokens, m.prompt);
}

}  // namespace
}  // namespace nanoserve::speculative
