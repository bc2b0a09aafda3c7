// KV rollback: after every verify step the target's cache must hold exactly the accepted
// tokens' keys and values — the same as plain decoding over those tokens — and the draft's
// cache must follow the accepted sequence, forgetting its rejected guesses.
#include <gtest/gtest.h>

#include "common/allclose.h"
#include "common/error.h"
#include "common/oracle/forward.h"
#include "common/speculative/draft_model_proposer.h"
#include "common/speculative/spec_decoder.h"
#include "common/tolerances.h"
#include "spec_test_support.h"

namespace nanoserve::speculative {
namespace {

/// Plain decoding's cache, extended one token at a time (prefill, then forward_token).
class PlainKv {
 public:
  explicit PlainKv(const Model& model) : model_(model), kv_(model.config) {}
  /// Caches `tokens[0 .. n-1]` the way plain decoding does.
  void extend(const std::vector<int>& tokens, int n) {
    if (kv_.length() == 0 && n > 1) {
      const std::vector<int> prefix(tokens.begin(), tokens.begin() + n - 1);
      oracle::forward_prompt(model_, kv_, prefix, 0);
    }
    while (kv_.length() < n) {
      oracle::forward_token(model_, kv_, tokens[size_t(kv_.length())], kv_.length());
    }
  }
  const oracle::KVStore& kv() const { return kv_; }

 private:
  const Model& model_;
  oracle::KVStore kv_;
};

/// Keys and values of positions 0 .. n-1 of every layer. Not bitwise: a verify pass computes
/// γ+1 rows in one GEMM where plain decoding runs one-row products, and Eigen sums those in
/// different orders (measured: up to 8e-7 apart). A row left over from a rejected token would
/// differ by O(1).
void expect_kv_prefix_equal(const oracle::KVStore& got, const oracle::KVStore& want, int n) {
  for (int l = 0; l < got.n_layers(); ++l) {
    const size_t count = size_t(n) * size_t(got.kv_dim());
    const CloseResult k = allclose(got.k(l), want.k(l), count, tol::kFp32Forward);
    const CloseResult v = allclose(got.v(l), want.v(l), count, tol::kFp32Forward);
    EXPECT_TRUE(k.ok) << "layer " << l << " keys: " << k.summary();
    EXPECT_TRUE(v.ok) << "layer " << l << " values: " << v.summary();
  }
}

TEST(Ch06Rollback, TargetKvEqualsPlainDecodingAfterEveryVerifyStep) {
  const testing::SpecFixtureModel& m = testing::synthetic_tiny();
  for (const char* label : {"layers-1", "unrelated"}) {
    for (bool sampled : {false, true}) {
      SCOPED_TRACE(std::string(label) + (sampled ? " sampled" : " greedy"));
      OracleRollbackDecoder target(m.target), draft(m.drafts.at(label));
      DraftModelProposer proposer(draft, m.target.config.vocab_size);
      PlainKv plain(m.target);
      std::vector<int> tokens = m.prompt;
      int rounds_with_rejection = 0;
      SpecOptions spec;
      spec.gamma = 5;
      spec.on_round = [&](const SpecRound& round) {
        tokens.insert(tokens.end(), round.appended.begin(), round.appended.end());
        if (round.accepted < round.proposed) ++rounds_with_rejection;
        // Exactly the accepted tokens but the newest (fed next round) are cached.
        ASSERT_EQ(target.length(), int(tokens.size()) - 1);
        plain.extend(tokens, target.length());
        expect_kv_prefix_equal(target.kv(), plain.kv(), target.length());
      };
      GenerateOptions options = testing::greedy_options(40);
      if (sampled) options.sampling = SamplingParams{1.0f, 0, 1.0f, 0.0f, 7};
      SpecDecoder(target, proposer, spec).generate(m.prompt, options);
      EXPECT_GT(rounds_with_rejection, 0) << "no rollback was exercised";
    }
  }
}

TEST(Ch06Rollback, DraftForgetsRejectedGuessesAndMatchesAFreshDraft) {
  const testing::SpecFixtureModel& m = testing::synthetic_tiny();
  const Model& draft_model = m.drafts.at("layers-2");
  SamplingParams params{0.9f, 0, 1.0f, 0.0f, 3};
  OracleRollbackDecoder draft(draft_model);
  DraftModelProposer proposer(draft, m.target.config.vocab_size);
  proposer.reset();
  const Proposal first = proposer.propose(m.prompt, 4, params);
  // The cache holds the context and x_1 .. x_3 (x_4 is fed only if it is accepted).
  std::vector<int> expected = m.prompt;
  expected.insert(expected.end(), first.tokens.begin(), first.tokens.begin() + 3);
  EXPECT_EQ(proposer.cached_tokens(), expected);
  EXPECT_EQ(draft.length(), int(expected.size()));

  // The target kept x_1 and replaced x_2 by another token: x_2 and x_3 must be forgotten.
  std::vector<int> context = m.prompt;
  context.push_back(first.tokens[0]);
  context.push_back((first.tokens[1] + 1) % m.target.config.vocab_size);
  const Proposal second = proposer.propose(context, 3, params);

  OracleRollbackDecoder fresh_backend(draft_model);
  DraftModelProposer fresh(fresh_backend, m.target.config.vocab_size);
  fresh.reset();
  const Proposal want = fresh.propose(context, 3, params);
  EXPECT_EQ(second.tokens, want.tokens);
  ASSERT_EQ(second.q.size(), want.q.size());
  for (size_t i = 0; i < want.q.size(); ++i) {
    for (size_t t = 0; t < want.q[i].size(); ++t) {
      ASSERT_NEAR(second.q[i][t], want.q[i][t], 1e-5) << "row " << i << " token " << t;
    }
  }
  std::vector<int> cached = context;
  cached.insert(cached.end(), second.tokens.begin(), second.tokens.begin() + 2);
  EXPECT_EQ(proposer.cached_tokens(), cached);

  // In the decoder the first difference is always the newest token; a context edited further
  // back (a proposer reused for another request) must roll back to the common prefix.
  std::vector<int> edited = context;
  edited[2] = (edited[2] + 1) % m.target.config.vocab_size;
  const Proposal third = proposer.propose(edited, 3, params);
  fresh.reset();
  const Proposal third_want = fresh.propose(edited, 3, params);
  EXPECT_EQ(third.tokens, third_want.tokens);
  for (size_t t = 0; t < third_want.q[0].size(); ++t) {
    ASSERT_NEAR(third.q[0][t], third_want.q[0][t], 1e-5) << "token " << t;
  }
}

TEST(Ch06Rollback, TruncateRefusesToGrowTheCache) {
  const testing::SpecFixtureModel& m = testing::synthetic_tiny();
  OracleRollbackDecoder backend(m.target);
  backend.forward_all(m.prompt, 0);
  EXPECT_THROW(backend.truncate(int(m.prompt.size()) + 1), InvalidArgument);
  EXPECT_THROW(backend.truncate(-1), InvalidArgument);
  backend.truncate(3);
  EXPECT_EQ(backend.length(), 3);
}

}  // namespace
}  // namespace nanoserve::speculative
