// Greedy speculative decoding must reproduce plain greedy decoding of the target token for
// token — whatever the proposer, whatever γ — because a greedy verifier keeps a draft token
// only when it *is* the target's argmax and otherwise emits the argmax itself.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>

#include "common/speculative/draft_model_proposer.h"
#include "common/speculative/ngram_proposer.h"
#include "common/speculative/spec_decoder.h"
#include "spec_test_support.h"

namespace nanoserve::speculative {
namespace {

using testing::SpecFixtureModel;

/// Runs every proposer of `m` (and the n-gram one) at γ = 1..8 and compares with plain greedy.
void expect_greedy_equal_for_every_proposer(const SpecFixtureModel& m, int max_new_tokens) {
  const GenerateOptions options = testing::greedy_options(max_new_tokens);
  const GenerateResult plain = testing::plain_generate(m.target, m.prompt, options);
  ASSERT_EQ(plain.generated(), max_new_tokens);

  std::vector<std::pair<std::string, const Model*>> proposers{{"ngram", nullptr}};
  for (const auto& [label, model] : m.drafts) proposers.emplace_back(label, &model);
  for (const auto& [label, draft_model] : proposers) {
    for (int gamma = 1; gamma <= 8; ++gamma) {
      SCOPED_TRACE(label + " gamma=" + std::to_string(gamma));
      OracleRollbackDecoder target(m.target);
      std::unique_ptr<OracleRollbackDecoder> draft;
      std::unique_ptr<Proposer> proposer;
      if (draft_model) {
        draft = std::make_unique<OracleRollbackDecoder>(*draft_model);
        proposer = std::make_unique<DraftModelProposer>(*draft, m.target.config.vocab_size);
      } else {
        proposer = std::make_unique<NgramProposer>();
      }
      SpecOptions spec;
      spec.gamma = gamma;
      int64_t asked = 0;  // Σ γ' over rounds: a draft model runs exactly one forward per token
      spec.on_round = [&](const SpecRound& round) { asked += round.gamma; };
      const SpecResult r = SpecDecoder(target, *proposer, spec).generate(m.prompt, options);
      EXPECT_EQ(r.generation.tokens, plain.tokens);
      EXPECT_EQ(r.generation.stop, plain.stop);
      // The bookkeeping must add up: every round yields its accepted drafts plus one token.
      EXPECT_EQ(r.stats.generated, max_new_tokens);
      EXPECT_EQ(r.stats.accepted + r.stats.rounds, r.stats.generated);
      EXPECT_LE(r.stats.tokens_per_target_forward(), gamma + 1.0);
      if (label == "identical") {
        EXPECT_EQ(r.stats.accepted, r.stats.proposed);
      }
      if (draft_model) {
        EXPECT_EQ(r.stats.draft_forwards, asked);
      }
    }
  }
}

TEST(Ch06SpecGreedy, EqualsPlainGreedyForEveryProposerAndGammaOnSyntheticTiny) {
  expect_greedy_equal_for_every_proposer(testing::synthetic_tiny(), 40);
}

TEST(Ch06SpecGreedy, EqualsPlainGreedyForEveryProposerAndGammaOnStories260K) {
  NANOSERVE_REQUIRE_DATA(path, "stories260K.bin");
  expect_greedy_equal_for_every_proposer(*testing::stories260k(), 80);
}

TEST(Ch06SpecGreedy, AdaptiveGammaEqualsPlainGreedyAndStaysInBounds) {
  const SpecFixtureModel& m = testing::synthetic_tiny();
  const GenerateOptions options = testing::greedy_options(60);
  const GenerateResult plain = testing::plain_generate(m.target, m.prompt, options);
  for (const char* label : {"identical", "layers-2", "unrelated"}) {
    SCOPED_TRACE(label);
    OracleRollbackDecoder target(m.target), draft(m.drafts.at(label));
    DraftModelProposer proposer(draft, m.target.config.vocab_size);
    SpecOptions spec;
    spec.gamma = 2;
    spec.adaptive = true;
    spec.max_gamma = 6;
    int max_seen = 0, min_seen = 100;
    spec.on_round = [&](const SpecRound& round) {
      if (round.gamma == 0) return;  // the budget's last token
      max_seen = std::max(max_seen, round.gamma);
      min_seen = std::min(min_seen, round.gamma);
    };
    const SpecResult r = SpecDecoder(target, proposer, spec).generate(m.prompt, options);
    EXPECT_EQ(r.generation.tokens, plain.tokens);
    EXPECT_LE(max_seen, 6);
    EXPECT_GE(min_seen, 1);
    // An identical draft is always right, so γ climbs to its bound.
    if (std::string(label) == "identical") {
      EXPECT_EQ(max_seen, 6);
    }
  }
}

}  // namespace
}  // namespace nanoserve::speculative
