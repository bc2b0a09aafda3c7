// The speedup prediction must describe the rounds a run really had: a round whose proposer
// offers nothing (an n-gram without a match) costs a target step and yields one token, and
// the γ-formula alone — which assumes γ drafts every round — overstates such runs.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "common/speculative/draft_model_proposer.h"
#include "common/speculative/spec_decoder.h"
#include "spec_test_support.h"

namespace nanoserve::speculative {
namespace {

/// Offers the wrapped proposer's drafts on every other round and nothing in between.
class EveryOtherRound final : public Proposer {
 public:
  explicit EveryOtherRound(Proposer& inner) : inner_(inner) {}
  void reset() override {
    inner_.reset();
    calls_ = 0;
  }
  void begin(const std::vector<int>& prompt) override {
    inner_.begin(prompt);
    calls_ = 0;
  }
  Proposal propose(const std::vector<int>& context, int gamma,
                   const SamplingParams& params) override {
    return calls_++ % 2 == 0 ? inner_.propose(context, gamma, params) : Proposal{};
  }
  int vocab_size() const override { return inner_.vocab_size(); }
  std::string name() const override { return "every-other(" + inner_.name() + ")"; }

 private:
  Proposer& inner_;
  int calls_ = 0;
};

TEST(Ch06SpecPrediction, RoundsOfferingEveryDraftReproduceTheGammaFormula) {
  for (double alpha : {0.0, 0.3, 0.8, 1.0}) {
    EXPECT_DOUBLE_EQ(expected_tokens_per_round(alpha, {0, 0, 0, 0, 7}),
                     expected_tokens_per_round(alpha, 4));
    EXPECT_DOUBLE_EQ(predicted_speedup(alpha, {0, 0, 0, 5}, 0.1), predicted_speedup(alpha, 3, 0.1));
  }
  // Half the rounds offer nothing: each of those costs one step and yields one token.
  const double full = expected_tokens_per_round(0.5, 4);
  EXPECT_DOUBLE_EQ(expected_tokens_per_round(0.5, {3, 0, 0, 0, 3}), (full + 1.0) / 2.0);
  EXPECT_DOUBLE_EQ(predicted_speedup(0.5, {3, 0, 0, 0, 3}, 0.25, 2.0),
                   (full + 1.0) / ((4 * 0.25 + 2.0) + 2.0));
  EXPECT_EQ(expected_tokens_per_round(0.5, std::vector<int64_t>{}), 0.0);
  EXPECT_EQ(predicted_speedup(0.5, std::vector<int64_t>{}, 0.25), 0.0);
}

TEST(Ch06SpecPrediction, EmptyRoundsAreCountedSoThePredictionMatchesTheRun) {
  const testing::SpecFixtureModel& m = testing::synthetic_tiny();
  const GenerateOptions options = testing::greedy_options(40);
  OracleRollbackDecoder target(m.target);
  OracleRollbackDecoder draft(m.drafts.at("identical"));
  DraftModelProposer identical(draft, m.target.config.vocab_size);
  EveryOtherRound proposer(identical);
  SpecOptions spec;
  spec.gamma = 4;
  const SpecStats s = SpecDecoder(target, proposer, spec).generate(m.prompt, options).stats;

  ASSERT_GE(s.rounds_offering.size(), 1u);
  int64_t rounds = 0, offered = 0;
  for (std::size_t k = 0; k < s.rounds_offering.size(); ++k) {
    rounds += s.rounds_offering[k];
    offered += std::int64_t(k) * s.rounds_offering[k];
  }
  EXPECT_EQ(rounds, s.rounds);
  EXPECT_EQ(offered, s.proposed);
  EXPECT_GE(s.rounds_offering[0], s.rounds / 2) << "every other round offers nothing";
  ASSERT_DOUBLE_EQ(s.acceptance_rate(), 1.0) << "an identical greedy draft is always accepted";
  // With α = 1 the prediction over the real rounds is exact; the γ formula is not.
  EXPECT_NEAR(expected_tokens_per_round(s.acceptance_rate(), s.rounds_offering),
              s.tokens_per_target_forward(), 1e-12);
  EXPECT_GT(expected_tokens_per_round(s.acceptance_rate(), spec.gamma),
            s.tokens_per_target_forward() + 1.0);
}

}  // namespace
}  // namespace nanoserve::speculative
