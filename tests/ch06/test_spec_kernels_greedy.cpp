// Greedy speculative decoding through the kernels (target and draft models each behind their
// own paged KV cache, verification as one multi-row paged-decode pass) must reproduce plain
// greedy decoding through the kernels token for token — for every kind of draft and γ.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ch01/engine_test_support.h"
#include "common/model_bundle.h"
#include "common/speculative/spec_decoder.h"
#include "spec_kernel_support.h"
#include "spec_test_support.h"

namespace nanoserve::speculative {
namespace {

/// Runs each named draft at each γ and compares with plain greedy through the kernels.
void expect_greedy_equal(const Model& target, const std::vector<int>& prompt,
                         const std::vector<std::string>& drafts, const std::vector<int>& gammas,
                         int max_new_tokens,
                         const std::vector<std::vector<int>>& calibration = {}) {
  const GenerateOptions options = testing::greedy_options(max_new_tokens);
  const GenerateResult plain = testing::plain_paged_generate(target, prompt, options);
  ASSERT_EQ(plain.generated(), max_new_tokens);
  auto target_backend = testing::paged_model(target);
  for (const std::string& name : drafts) {
    ch06::KernelDraft draft = testing::kernel_draft(target, name, calibration);
    for (int gamma : gammas) {
      SCOPED_TRACE(draft.label + " gamma=" + std::to_string(gamma));
      SpecOptions spec;
      spec.gamma = gamma;
      const SpecResult r =
          SpecDecoder(*target_backend, *draft.proposer, spec).generate(prompt, options);
      EXPECT_EQ(r.generation.tokens, plain.tokens);
      EXPECT_EQ(r.generation.stop, plain.stop);
      EXPECT_EQ(r.stats.accepted + r.stats.rounds, r.stats.generated);
      EXPECT_LE(r.stats.tokens_per_target_forward(), gamma + 1.0);
      if (draft.model) {
        EXPECT_EQ(draft.model->manager().check_invariants(), "");
      }
      EXPECT_EQ(target_backend->manager().check_invariants(), "");
    }
  }
}

// The simulator runs a forward pass in tens of milliseconds, so outputs are short and each
// draft kind is its own test (ctest runs them in parallel); γ = 8 with a 12-token budget
// also clips γ to the tokens left.
TEST(Ch06SpecKernels, GreedyEqualsPlainGreedyWithALayerTruncatedDraftOnSyntheticTiny) {
  NANOSERVE_REQUIRE_DEVICE();
  const testing::SpecFixtureModel& m = testing::synthetic_tiny();
  expect_greedy_equal(m.target, m.prompt, {"layers-1"}, {1, 3, 8}, 12);
}

TEST(Ch06SpecKernels, GreedyEqualsPlainGreedyWithAQuantizedDraftOnSyntheticTiny) {
  NANOSERVE_REQUIRE_DEVICE();
  const testing::SpecFixtureModel& m = testing::synthetic_tiny();
  expect_greedy_equal(m.target, m.prompt, {"int4-rtn"}, {1, 3, 8}, 12);
}

TEST(Ch06SpecKernels, GreedyEqualsPlainGreedyWithTheNgramProposerOnSyntheticTiny) {
  NANOSERVE_REQUIRE_DEVICE();
  const testing::SpecFixtureModel& m = testing::synthetic_tiny();
  expect_greedy_equal(m.target, m.prompt, {"ngram"}, {1, 3, 8}, 12);
}

TEST(Ch06SpecKernels, AnIdenticalDraftThroughItsOwnCacheIsAlwaysAccepted) {
  NANOSERVE_REQUIRE_DEVICE();
  const testing::SpecFixtureModel& m = testing::synthetic_tiny();
  // "layers-4" of a 4-layer model is the target itself, with its own device copy and cache.
  ASSERT_EQ(m.target.config.n_layers, 4);
  const GenerateOptions options = testing::greedy_options(10);
  auto target = testing::paged_model(m.target);
  ch06::KernelDraft draft = testing::kernel_draft(m.target, "layers-4");
  SpecOptions spec;
  spec.gamma = 4;
  const SpecResult r = SpecDecoder(*target, *draft.proposer, spec).generate(m.prompt, options);
  EXPECT_EQ(r.generation.tokens, testing::plain_paged_generate(m.target, m.prompt, options).tokens);
  EXPECT_EQ(r.stats.accepted, r.stats.proposed);
  EXPECT_EQ(r.stats.rejected, 0);
  EXPECT_EQ(r.stats.rounds, 2);  // 10 tokens = 2 rounds of 4 drafts + 1 bonus
}

// Every draft kind of the chapter on the real model, at one γ (the sweep over γ is the
// program's job; the γ edge cases run on synthetic:tiny).
TEST(Ch06SpecKernels, GreedyEqualsPlainGreedyForEveryDraftKindOnStories260K) {
  NANOSERVE_REQUIRE_DEVICE();
  NANOSERVE_REQUIRE_DATA(path, "stories260K.bin");
  const ModelBundle b = load_model_bundle("stories260K.bin");
  const std::vector<int> prompt = b.tokenizer->encode("Once upon a time, there was a", true, false);
  const auto calibration = testing::short_calibration(*b.tokenizer);
  std::vector<std::string> drafts{"layers-2", "int8-rtn", "ngram"};
  if (!calibration.empty()) {
    drafts.emplace_back("int4-gptq");
    drafts.emplace_back("int4-awq");
  }
  expect_greedy_equal(b.model, prompt, drafts, {3}, 12, calibration);
}

}  // namespace
}  // namespace nanoserve::speculative
