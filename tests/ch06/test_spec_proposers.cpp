// The proposers on their own: prompt lookup on handmade sequences, the layer-truncated draft
// against the target's own intermediate activations, and the draft model's q rows.
#include <gtest/gtest.h>

#include "common/allclose.h"
#include "common/oracle/forward.h"
#include "common/oracle/ops.h"
#include "common/sampling/rng.h"
#include "common/speculative/draft_model_proposer.h"
#include "common/speculative/ngram_proposer.h"
#include "common/tolerances.h"
#include "spec_test_support.h"

namespace nanoserve::speculative {
namespace {

TEST(Ch06Ngram, ProposesWhatFollowedTheMostRecentEarlierMatch) {
  //                      0  1  2  3  4  5  6  7  8  9
  const std::vector<int> c{5, 6, 7, 8, 9, 6, 7, 1, 6, 7};
  // Suffix (6, 7) occurs at 1 (→ 8 9 6 7 1 …) and at 5 (→ 1 6 7): the most recent wins.
  EXPECT_EQ(prompt_lookup(c, 3, 2, 1), (std::vector<int>{1, 6, 7}));
  EXPECT_EQ(prompt_lookup(c, 2, 2, 1), (std::vector<int>{1, 6}));
  // A 3-gram (1, 6, 7) never occurred before: fall back to the 2-gram.
  EXPECT_EQ(prompt_lookup(c, 3, 3, 2), (std::vector<int>{1, 6, 7}));
  // Only 3-grams allowed: no match, no proposal.
  EXPECT_TRUE(prompt_lookup(c, 3, 3, 3).empty());
}

TEST(Ch06Ngram, ContinuationMayRunIntoTheSuffixAndStopsAtTheContextEnd) {
  const std::vector<int> c{4, 2, 4, 2, 4};
  // Suffix (2, 4) last occurred at 1; what followed it runs into the suffix itself and is cut
  // at the context end.
  EXPECT_EQ(prompt_lookup(c, 8, 2, 2), (std::vector<int>{2, 4}));
  EXPECT_EQ(prompt_lookup(c, 8, 3, 3), (std::vector<int>{2, 4}));  // (4, 2, 4) at 0
  EXPECT_TRUE(prompt_lookup({7}, 4, 3, 1).empty());                // nothing before the suffix
  EXPECT_TRUE(prompt_lookup(c, 0, 2, 1).empty());
}

TEST(Ch06Ngram, ProposerReturnsPointMassesAndNoModelCost) {
  NgramProposer ngram(2, 1);
  const Proposal p = ngram.propose({5, 6, 7, 8, 9, 6, 7, 1, 6, 7}, 3, SamplingParams{});
  EXPECT_EQ(p.tokens, (std::vector<int>{1, 6, 7}));
  EXPECT_TRUE(p.q.empty());
  EXPECT_EQ(ngram.forwards(), 0);
  EXPECT_EQ(ngram.vocab_size(), 0);
}

TEST(Ch06Drafts, FirstLayersEqualsTargetActivationsThroughFinalNormAndClassifier) {
  const testing::SpecFixtureModel& m = testing::synthetic_tiny();
  const ModelConfig& c = m.target.config;
  for (int k : {1, 2, 4}) {
    SCOPED_TRACE(k);
    const Model draft = first_layers(m.target, k);
    EXPECT_EQ(draft.config.n_layers, k);
    EXPECT_NO_THROW(draft.validate());
    // Reference: the full model's residual stream after block k-1, through the target's own
    // final RMSNorm and classifier.
    std::vector<float> residual;  // (T, dim)
    oracle::ForwardHooks hooks;
    hooks.on_block_output = [&](int layer, const float* x, int rows, int dim) {
      if (layer == k - 1) residual.assign(x, x + size_t(rows) * size_t(dim));
    };
    oracle::forward_prompt(m.target, m.prompt, &hooks);
    const int T = int(m.prompt.size());
    std::vector<float> normed(residual.size()), want(size_t(T) * size_t(c.vocab_size));
    oracle::rmsnorm(residual.data(), m.target.final_norm.data(), T, c.dim, c.norm_eps,
                    normed.data());
    oracle::matmul(normed.data(), m.target.classifier_weights().data(), T, c.dim, c.vocab_size,
                   want.data());
    const CloseResult r =
        allclose(oracle::forward_prompt(draft, m.prompt), want, tol::kFp32Forward);
    EXPECT_TRUE(r.ok) << r.summary();
  }
}

TEST(Ch06Drafts, DraftModelQRowsAreTheFilteredDraftDistributions) {
  const testing::SpecFixtureModel& m = testing::synthetic_tiny();
  const Model& draft_model = m.drafts.at("layers-1");
  const SamplingParams params{0.7f, 20, 0.9f, 0.0f, 5};
  OracleRollbackDecoder backend(draft_model);
  DraftModelProposer proposer(backend, m.target.config.vocab_size);
  proposer.reset();
  const Proposal p = proposer.propose(m.prompt, 3, params);
  ASSERT_EQ(p.tokens.size(), 3u);
  ASSERT_EQ(p.q.size(), 3u);
  std::vector<int> context = m.prompt;
  for (size_t i = 0; i < 3; ++i) {
    // q_i: the draft's logits after the context so far, filtered like the target's p.
    const std::vector<float> all = oracle::forward_prompt(draft_model, context);
    const std::vector<double> want =
        probabilities(all.data() + all.size() - size_t(draft_model.config.vocab_size),
                      draft_model.config.vocab_size, params);
    int support = 0;
    for (size_t t = 0; t < want.size(); ++t) {
      ASSERT_NEAR(p.q[i][t], want[t], 1e-5) << "row " << i << " token " << t;
      support += want[t] > 0;
    }
    EXPECT_LE(support, 20);  // top-k = 20 reached q
    // x_i is drawn from q_i with the draft's own stream at its position.
    const uint64_t pos = m.prompt.size() + i;
    EXPECT_EQ(p.tokens[i],
              sample_from(p.q[i], uniform01(params.seed, pos, RngStream::kDraftSample)));
    context.push_back(p.tokens[i]);
  }
  EXPECT_EQ(proposer.forwards(), 3);
}

}  // namespace
}  // namespace nanoserve::speculative
