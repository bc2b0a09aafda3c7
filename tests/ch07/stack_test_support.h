#pragma once
// Helpers shared by the chapter-7 engine tests: a drafter for the fake model whose guesses are
// right for a while and then wrong (so every acceptance length happens), random scheduling
// scenarios with speculation and small pools, and step-by-step driving with the invariants
// checked after every step.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "common/engine/serve/drafter.h"
#include "common/engine/serve/scheduler.h"
#include "common/harness/fake_executor.h"
#include "common/loaders/synthetic_model.h"
#include "common/sampling/rng.h"

namespace nanoserve::engine {
/// Prints a swap as {d<device> h<host>} in test failures (every test file that compares swaps
/// includes this header, so gtest's printer is the same everywhere).
inline void PrintTo(const BlockSwap& s, std::ostream* os) {
  *os << "{d" << s.device << " h" << s.host << "}";
}
}  // namespace nanoserve::engine

namespace nanoserve::testing {

/// A micro Llama with random weights (dim 16, 2 heads sharing 1 KV head, vocab 24, context
/// 64): cheap enough on the simulator for tests that need thousands of rows. Its logits have
/// std ~1 over 24 tokens: broad distributions, and greedy decoding falls into loops quickly.
inline Model micro_model(std::uint64_t seed, int n_layers = 1) {
  ModelConfig c;
  c.name = "micro-" + std::to_string(seed);
  c.dim = 16;
  c.hidden_dim = 32;
  c.n_layers = n_layers;
  c.n_heads = 2;
  c.n_kv_heads = 1;
  c.head_dim = 8;
  c.vocab_size = 24;
  c.max_seq_len = 64;
  c.tied_classifier = false;
  return make_synthetic_model(c, seed);
}

/// Deterministic draws for one scenario (Philox on the workload stream).
struct Draws {
  std::uint64_t seed;
  std::uint64_t counter = 0;
  /// Uniform in [lo, hi].
  int uniform(int lo, int hi) {
    const std::uint32_t bits = random_bits(seed, counter++, RngStream::kWorkload, 77)[0];
    return lo + int(bits % std::uint32_t(hi - lo + 1));
  }
  /// True with probability percent / 100.
  bool chance(int percent) { return uniform(0, 99) < percent; }
};

/// Drafts for the fake model (harness::fake_next_token): the true continuation up to a
/// point chosen from (request, position), then wrong tokens — so acceptance lengths 0 .. γ
/// all occur. Deterministic, hence no q rows.
class FakeModelDrafter final : public engine::Drafter {
 public:
  explicit FakeModelDrafter(int vocab) : vocab_(vocab) {}
  void propose(std::vector<engine::DraftRequest>& batch) override {
    for (engine::DraftRequest& d : batch) {
      std::vector<int> ctx = d.request->seq.token_ids;
      Draws draws{std::uint64_t(d.request->id()) * 1000003u + ctx.size()};
      const int right = draws.uniform(0, d.gamma);  // how many guesses are right
      d.proposal = {};
      for (int i = 0; i < d.gamma; ++i) {
        int t = harness::fake_next_token(d.request->seq.sampling, ctx.data(), int(ctx.size()),
                                         vocab_);
        if (i >= right) t = (t + 1 + draws.uniform(0, vocab_ - 2)) % vocab_;  // never t itself
        d.proposal.tokens.push_back(t);
        ctx.push_back(t);
      }
      ++calls;
    }
  }
  void retain(const std::vector<std::int64_t>& ids) override { retained = ids; }
  int vocab_size() const override { return vocab_; }
  std::string name() const override { return "fake-model"; }

  long long calls = 0;                 ///< requests drafted for
  std::vector<std::int64_t> retained;  ///< the last retain() argument

 private:
  int vocab_;
};

/// One step (schedule → fake execute → update → propose drafts) with the invariants checked
/// before and after the update. Returns the output.
inline engine::SchedulerOutput spec_step(engine::Scheduler& s, harness::FakeExecutor& ex,
                                         engine::Drafter* drafter, double now = 0) {
  engine::SchedulerOutput out = s.schedule(now);
  EXPECT_EQ(s.check_invariants(), "");
  const std::vector<int> tokens = out.empty() ? std::vector<int>{} : ex.execute(out);
  s.update(out, tokens, now + 1);
  EXPECT_EQ(s.check_invariants(), "");
  if (drafter != nullptr) s.propose_drafts(*drafter);
  return out;
}

}  // namespace nanoserve::testing
