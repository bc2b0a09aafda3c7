// Speculative decoding through the kernels, cache side: after every verify-and-rollback the
// target's paged KV holds exactly the accepted positions with the values plain decoding
// computes for them, the block accounting stays exact (no leaked or missing block), and the
// edge cases end where plain decoding ends.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ch01/engine_test_support.h"
#include "common/error.h"
#include "common/loaders/synthetic_model.h"
#include "common/speculative/draft_model_proposer.h"
#include "common/speculative/spec_decoder.h"
#include "common/tolerances.h"
#include "spec_kernel_support.h"
#include "spec_test_support.h"

namespace nanoserve::speculative {
namespace {

using engine::PagedDecoder;

int blocks_for(int positions, int block_size) { return (positions + block_size - 1) / block_size; }

// Blocks of 4 positions, so that rollbacks cross block boundaries and free whole blocks; a
// 1-layer draft of the 4-layer model, so that drafts are rejected often.
TEST(Ch06SpecKernelsKv, TargetKvEqualsPlainDecodingsAfterEveryVerifyStep) {
  NANOSERVE_REQUIRE_DEVICE();
  const testing::SpecFixtureModel& m = testing::synthetic_tiny();
  const int kBlock = 4, kContext = 64;
  const GenerateOptions options = testing::greedy_options(12);

  // Reference: plain decoding; its cache ends holding every position but the last token's.
  auto plain = testing::paged_model(m.target, kContext, kBlock);
  const GenerateResult want = generate(*plain, m.prompt, options);
  const int n_layers = m.target.config.n_layers;
  std::vector<std::vector<float>> ref_k, ref_v;  // per layer: (positions, n_kv_heads, head_dim)
  for (int l = 0; l < n_layers; ++l) {
    ref_k.push_back(plain->cache().to_host(plain->manager().block_table(plain->seq_id()).block_ids(), l, plain->length(), false));
    ref_v.push_back(plain->cache().to_host(plain->manager().block_table(plain->seq_id()).block_ids(), l, plain->length(), true));
  }
  const size_t kv_dim = size_t(m.target.config.kv_dim());

  auto target = testing::paged_model(m.target, kContext, kBlock);
  ch06::KernelDraft draft = testing::kernel_draft(m.target, "layers-1", {}, kContext);
  SpecOptions spec;
  spec.gamma = 3;
  int rounds = 0, rejections = 0;
  spec.on_round = [&](const SpecRound& round) {
    ++rounds;
    rejections += round.accepted < round.proposed;
    const int len = target->length();
    // The accepted prefix, minus the last token (fed by the next round), and nothing else.
    EXPECT_EQ(len, round.first_position + int(round.appended.size()) - 1);
    EXPECT_EQ(int(target->manager().block_table(target->seq_id()).num_blocks()),
              blocks_for(len, kBlock));
    EXPECT_EQ(target->manager().pool().num_used_blocks(), blocks_for(len, kBlock));
    EXPECT_EQ(target->manager().check_invariants(), "");
    // Same values as plain decoding up to fp32 rounding: the accepted rows were computed in a
    // (γ+1)-row pass (other GEMM tiling and summation order than one-row steps), the rest of
    // the arithmetic is identical — the tolerance of one forward pass reordered.
    for (int l = 0; l < n_layers; ++l) {
      const size_t n = size_t(len) * kv_dim;
      const std::vector<float> want_k(ref_k[size_t(l)].begin(), ref_k[size_t(l)].begin() + long(n));
      const std::vector<float> want_v(ref_v[size_t(l)].begin(), ref_v[size_t(l)].begin() + long(n));
      testing::expect_close(target->cache().to_host(target->manager().block_table(target->seq_id()).block_ids(), l, len, false), want_k,
                            tol::kFp32Forward, "K, layer " + std::to_string(l));
      testing::expect_close(target->cache().to_host(target->manager().block_table(target->seq_id()).block_ids(), l, len, true), want_v,
                            tol::kFp32Forward, "V, layer " + std::to_string(l));
    }
  };
  const SpecResult r = SpecDecoder(*target, *draft.proposer, spec).generate(m.prompt, options);
  EXPECT_EQ(r.generation.tokens, want.tokens);
  EXPECT_GT(rejections, 0) << "no round rejected a draft: rollback went untested";
  EXPECT_GT(rounds, 1);
  // The draft's cache follows the accepted tokens too, with the same accounting.
  EXPECT_EQ(draft.model->manager().check_invariants(), "");
  EXPECT_EQ(draft.model->manager().pool().num_used_blocks(),
            blocks_for(draft.model->length(), draft.model->manager().block_size()));
  // Nothing leaks: a reset returns every block to the pool.
  target->reset();
  draft.model->reset();
  EXPECT_EQ(target->manager().pool().num_free_blocks(), target->manager().pool().num_blocks());
  EXPECT_EQ(draft.model->manager().pool().num_free_blocks(),
            draft.model->manager().pool().num_blocks());
}

TEST(Ch06SpecKernelsKv, GammaBeyondTheBudgetIsClippedToTheTokensLeft) {
  NANOSERVE_REQUIRE_DEVICE();
  const testing::SpecFixtureModel& m = testing::synthetic_tiny();
  const GenerateOptions options = testing::greedy_options(3);
  auto target = testing::paged_model(m.target, 64);
  ch06::KernelDraft draft = testing::kernel_draft(m.target, "layers-4", {}, 64);
  SpecOptions spec;
  spec.gamma = 8;
  std::vector<int> asked;
  spec.on_round = [&](const SpecRound& round) { asked.push_back(round.gamma); };
  const SpecResult r = SpecDecoder(*target, *draft.proposer, spec).generate(m.prompt, options);
  EXPECT_EQ(r.generation.tokens,
            testing::plain_paged_generate(m.target, m.prompt, options, 64).tokens);
  // 3 tokens left: 2 drafts + the bonus token, in one round.
  EXPECT_EQ(asked, std::vector<int>{2});
  EXPECT_EQ(r.generation.stop, StopReason::kMaxTokens);
}

TEST(Ch06SpecKernelsKv, GammaBeyondTheContextStopsWherePlainDecodingStops) {
  NANOSERVE_REQUIRE_DEVICE();
  const testing::SpecFixtureModel& m = testing::synthetic_tiny();
  const int context = int(m.prompt.size()) + 6;  // room for 6 generated tokens
  const GenerateOptions options = testing::greedy_options(100);
  const GenerateResult want = testing::plain_paged_generate(m.target, m.prompt, options, context);
  ASSERT_EQ(want.stop, StopReason::kContext);
  auto target = testing::paged_model(m.target, context, 4);
  ch06::KernelDraft draft = testing::kernel_draft(m.target, "layers-4", {}, context);
  SpecOptions spec;
  spec.gamma = 8;
  const SpecResult r = SpecDecoder(*target, *draft.proposer, spec).generate(m.prompt, options);
  EXPECT_EQ(r.generation.tokens, want.tokens);
  EXPECT_EQ(r.generation.stop, StopReason::kContext);
  EXPECT_LE(target->length(), context);
  EXPECT_EQ(target->manager().check_invariants(), "");
}

TEST(Ch06SpecKernelsKv, EosAmongAcceptedDraftsEndsTheOutputAndRollsItsTailBack) {
  NANOSERVE_REQUIRE_DEVICE();
  const testing::SpecFixtureModel& m = testing::synthetic_tiny();
  const GenerateResult free_run =
      testing::plain_paged_generate(m.target, m.prompt, testing::greedy_options(8));
  // The 4th generated token as "EOS": an identical draft proposes 8 and all are accepted, so
  // the stop token sits in the middle of the accepted drafts.
  const int eos = free_run.tokens[m.prompt.size() + 3];
  const GenerateOptions options = testing::greedy_options(8, {eos});
  const GenerateResult want = testing::plain_paged_generate(m.target, m.prompt, options);
  ASSERT_EQ(want.stop, StopReason::kStopToken);
  auto target = testing::paged_model(m.target, 64, 4);
  ch06::KernelDraft draft = testing::kernel_draft(m.target, "layers-4", {}, 64);
  SpecOptions spec;
  spec.gamma = 8;
  int accepted_in_round = -1;
  spec.on_round = [&](const SpecRound& round) { accepted_in_round = round.accepted; };
  const SpecResult r = SpecDecoder(*target, *draft.proposer, spec).generate(m.prompt, options);
  EXPECT_EQ(r.generation.tokens, want.tokens);
  EXPECT_EQ(r.generation.stop, StopReason::kStopToken);
  EXPECT_EQ(r.stats.rounds, 1);
  EXPECT_GT(accepted_in_round, int(want.generated()) - 1);  // EOS was an accepted draft
  // The KV of the accepted drafts after EOS is gone: only the output minus its last token.
  EXPECT_EQ(target->length(), int(want.tokens.size()) - 1);
  EXPECT_EQ(target->manager().pool().num_used_blocks(), blocks_for(target->length(), 4));
  EXPECT_EQ(target->manager().check_invariants(), "");
}

TEST(Ch06SpecKernelsKv, ADraftWithAnotherVocabularyIsRefused) {
  NANOSERVE_REQUIRE_DEVICE();
  const testing::SpecFixtureModel& m = testing::synthetic_tiny();
  ModelConfig other = m.target.config;
  other.vocab_size = 256;
  other.name = "synthetic:tiny-vocab256";
  PagedDecoder draft(std::make_unique<engine::DeviceModel>(make_synthetic_model(other, 5),
                                                             DType::kF32));
  try {
    DraftModelProposer proposer(draft, m.target.config.vocab_size);
    FAIL() << "a 256-token draft for a 512-token target was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("share the target's tokenizer"), std::string::npos)
        << e.what();
  }
}

TEST(Ch06SpecKernelsSampling, SampledOutputIsAFunctionOfTheSeedOnly) {
  NANOSERVE_REQUIRE_DEVICE();
  const testing::SpecFixtureModel& m = testing::synthetic_tiny();
  GenerateOptions options;
  options.max_new_tokens = 10;
  options.sampling.temperature = 1.0f;
  options.sampling.seed = 7;
  auto target = testing::paged_model(m.target, 64);
  ch06::KernelDraft draft = testing::kernel_draft(m.target, "layers-1", {}, 64);
  SpecOptions spec;
  spec.gamma = 3;
  SpecDecoder decoder(*target, *draft.proposer, spec);
  const std::vector<int> first = decoder.generate(m.prompt, options).generation.tokens;
  // Another request in between (other seed, other prompt) must not change the stream.
  GenerateOptions other = options;
  other.sampling.seed = 8;
  decoder.generate({1, 2, 3}, other);
  EXPECT_EQ(decoder.generate(m.prompt, options).generation.tokens, first);
  // Fresh backends, same seed: same tokens.
  auto target2 = testing::paged_model(m.target, 64);
  ch06::KernelDraft draft2 = testing::kernel_draft(m.target, "layers-1", {}, 64);
  EXPECT_EQ(SpecDecoder(*target2, *draft2.proposer, spec).generate(m.prompt, options)
                .generation.tokens,
            first);
}

}  // namespace
}  // namespace nanoserve::speculative
