// NaiveDecoder: the kernel forward in both chapter-1 modes against the CPU oracle, step by
// step, on the synthetic model and the real ones; the real model's reference story; and the
// edges of generation (context, zero steps, BOS only).
#include <gtest/gtest.h>

#include <memory>
#include <ostream>
#include <string>

#include "common/engine/decode/naive_decoder.h"
#include "common/error.h"
#include "common/model_bundle.h"
#include "common/oracle/forward.h"
#include "common/oracle/oracle_decoder.h"
#include "common/tolerances.h"
#include "engine_test_support.h"
#include "reference_story.h"
#include "test_support.h"

namespace nanoserve::engine {
namespace {

using nanoserve::testing::greedy;
using nanoserve::testing::RecordingDecoder;
using nanoserve::testing::replay;
using nanoserve::testing::StepLogits;

Tolerance forward_tolerance(DType dtype) {
  switch (dtype) {
    case DType::kF16: return tol::kKernelForwardFp16;
    case DType::kBF16: return tol::kKernelForwardBf16;
    case DType::kF32: default: return tol::kFp32Forward;
  }
}

// A prompt long enough (cut to 20 tokens, > 16 with every tokenizer here) that the no-cache
// passes run the GEMM path of the linear layers while the naive-cache decode steps run GEMV:
// the two modes share no linear kernel.
constexpr const char* kPrompt =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the "
    "park with her friends. One day, she found a big red ball under a tree.";
constexpr std::size_t kPromptTokens = 20;

struct ModeCase {
  const char* model;  // a synthetic name or a data file
  DType dtype;
  int steps;
};

// Readable parameters in gtest's messages.
void PrintTo(const ModeCase& c, std::ostream* os) { *os << c.model << " " << dtype_name(c.dtype); }

std::string case_name(const ::testing::TestParamInfo<ModeCase>& info) {
  std::string name = std::string(info.param.model) + "_" + dtype_name(info.param.dtype);
  for (char& ch : name) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return name;
}

class Ch01ModesMatchTheOracle : public ::testing::TestWithParam<ModeCase> {};

// Greedy tokens are identical in both modes; every step's logits of each mode are within the
// dtype's tolerance of the other mode and of the oracle fed the same tokens.
TEST_P(Ch01ModesMatchTheOracle, StepByStepInBothModes) {
  NANOSERVE_REQUIRE_DEVICE();
  const ModeCase& p = GetParam();
  const bool synthetic = std::string(p.model).rfind("synthetic:", 0) == 0;
  if (!synthetic && !find_data_file(p.model)) {
    GTEST_SKIP() << "real data file '" << p.model << "' not found; set NANOSERVE_DATA";
  }
  const ModelBundle b = load_model_bundle(p.model);
  const DeviceModel device(b.model, p.dtype);
  const Model rounded = round_weights(b.model, p.dtype);
  std::vector<int> prompt = b.tokenizer->encode(kPrompt, true, false);
  ASSERT_GE(prompt.size(), kPromptTokens);
  prompt.resize(kPromptTokens);

  NaiveDecoder naive(device, CacheMode::kNaiveCache);
  NaiveDecoder no_cache(device, CacheMode::kNoCache);
  RecordingDecoder naive_rec(naive), no_cache_rec(no_cache);
  const GenerateResult with_cache = greedy(naive_rec, prompt, p.steps);
  const GenerateResult without = greedy(no_cache_rec, prompt, p.steps);
  ASSERT_EQ(with_cache.tokens, without.tokens);
  ASSERT_EQ(with_cache.generated(), p.steps);

  oracle::OracleDecoder oracle(rounded);
  // Generation fed back every token but the last (sampled, never fed): replay exactly those.
  const std::vector<int> fed(with_cache.tokens.begin(), with_cache.tokens.end() - 1);
  const StepLogits want = replay(oracle, fed, with_cache.prompt_tokens);
  ASSERT_EQ(naive_rec.logits().size(), want.size());
  ASSERT_EQ(no_cache_rec.logits().size(), want.size());
  const Tolerance t = forward_tolerance(p.dtype);
  for (std::size_t i = 0; i < want.size(); ++i) {
    testing::expect_close(naive_rec.logits()[i], want[i], t, "naive-cache vs oracle, step " + std::to_string(i));
    testing::expect_close(no_cache_rec.logits()[i], naive_rec.logits()[i], t,
                          "no-cache vs naive-cache, step " + std::to_string(i));
  }
  // The work: no-cache recomputed every prefix, naive-cache each position once.
  const std::int64_t n0 = with_cache.prompt_tokens;
  EXPECT_EQ(naive.rows_computed(), n0 + p.steps - 1);
  EXPECT_EQ(no_cache.rows_computed(), p.steps * n0 + std::int64_t(p.steps) * (p.steps - 1) / 2);
}

INSTANTIATE_TEST_SUITE_P(
    Ch01, Ch01ModesMatchTheOracle,
    ::testing::Values(ModeCase{"synthetic:tiny", DType::kF32, 6},
                      ModeCase{"synthetic:tiny", DType::kF16, 6},
                      ModeCase{"synthetic:tiny", DType::kBF16, 6},
                      ModeCase{"stories260K.bin", DType::kF32, 6},
                      ModeCase{"stories260K.bin", DType::kF16, 6},
                      // rotate-half RoPE (Hugging Face layout)
                      ModeCase{"tinystories-656k", DType::kF32, 6},
                      ModeCase{"tinystories-656k", DType::kF16, 6}),
    case_name);

TEST(Ch01NaiveDecoder, Stories260KGreedyReproducesTheReferenceStory) {
  NANOSERVE_REQUIRE_DEVICE();
  NANOSERVE_REQUIRE_DATA(path, "stories260K.bin");
  const ModelBundle b = load_model_bundle(path);
  const DeviceModel device(b.model, DType::kF32);
  NaiveDecoder backend(device, CacheMode::kNaiveCache);
  testing::expect_reference_story(backend, *b.tokenizer);
}

TEST(Ch01NaiveDecoder, AllPositionLogitsMatchTheOracleAcrossChunks) {
  NANOSERVE_REQUIRE_DEVICE();
  const Model m = load_model_bundle("synthetic:tiny").model;
  const DeviceModel device(m, DType::kF32);
  ModelRunner runner(device, {7, 7});  // 20 tokens run as chunks of 7, 7 and 6
  NaiveKVCache cache(m.config, DType::kF32, 32, 1);
  std::vector<int> tokens;
  for (int i = 0; i < 20; ++i) tokens.push_back((53 * i + 5) % 512);
  const std::vector<float> got = kernel_logits(runner, cache)(tokens);
  testing::expect_close(got, oracle::forward_prompt(m, tokens), tol::kFp32Forward, "20 positions");
  EXPECT_TRUE(cache.can_allocate());  // the region was returned
}

class Ch01GenerationEdges : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!device_available()) GTEST_SKIP() << "no CUDA device";
    bundle_ = load_model_bundle("synthetic:tiny");
    device_ = std::make_unique<DeviceModel>(bundle_.model, DType::kF32);
  }
  ModelBundle bundle_;
  std::unique_ptr<DeviceModel> device_;
};

TEST_F(Ch01GenerationEdges, APromptLongerThanTheContextIsRefusedUpFront) {
  NaiveDecoder backend(*device_, CacheMode::kNaiveCache, 16);
  const std::vector<int> prompt(17, 65);
  try {
    greedy(backend, prompt, 4);
    FAIL() << "a 17-token prompt in a 16-position context was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("the context holds 16"), std::string::npos) << e.what();
  }
  // Called directly, the backend refuses too, naming the reservation.
  try {
    backend.forward(prompt, 0);
    FAIL() << "forward accepted 17 positions";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("exceed its 16 reserved positions"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(backend.cache().length(backend.region()), 0);
}

TEST_F(Ch01GenerationEdges, ZeroStepsReturnThePromptWithoutRunningTheModel) {
  for (CacheMode mode : {CacheMode::kNoCache, CacheMode::kNaiveCache}) {
    NaiveDecoder backend(*device_, mode);
    const GenerateResult r = greedy(backend, {1, 72, 105}, 0);
    EXPECT_EQ(r.tokens, (std::vector<int>{1, 72, 105}));
    EXPECT_EQ(r.generated(), 0);
    EXPECT_EQ(backend.rows_computed(), 0);
  }
}

TEST_F(Ch01GenerationEdges, APromptOfOnlyBosGeneratesWhatTheOracleGenerates) {
  const int bos = bundle_.tokenizer->bos_id();
  NaiveDecoder backend(*device_, CacheMode::kNaiveCache);
  oracle::OracleDecoder oracle(bundle_.model);
  const GenerateResult got = greedy(backend, {bos}, 8);
  EXPECT_EQ(got.tokens, greedy(oracle, {bos}, 8).tokens);
  EXPECT_EQ(got.generated(), 8);
}

TEST_F(Ch01GenerationEdges, ReachingMaxSeqLenStopsGenerationWithReasonContext) {
  // A 12-position cache: a 4-token prompt leaves room for 8 tokens (the last one sampled but
  // never fed back), however many steps were asked for.
  for (CacheMode mode : {CacheMode::kNoCache, CacheMode::kNaiveCache}) {
    NaiveDecoder backend(*device_, mode, 12);
    const std::vector<int> prompt = {1, 84, 104, 101};
    const GenerateResult r = greedy(backend, prompt, 40);
    EXPECT_EQ(r.stop, StopReason::kContext) << to_string(mode);
    EXPECT_EQ(r.tokens.size(), 12u) << to_string(mode);
    oracle::OracleDecoder oracle(bundle_.model);
    EXPECT_EQ(r.tokens, greedy(oracle, prompt, 8).tokens) << to_string(mode);
    // The last token still fits at position 11; a token after it is refused with the reason.
    backend.forward({r.tokens.back()}, 11);
    try {
      backend.forward({r.tokens.back()}, 12);
      FAIL() << "position 12 of a 12-position cache was accepted";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("exceed its 12 reserved positions"), std::string::npos)
          << e.what();
    }
  }
}

TEST_F(Ch01GenerationEdges, NoCacheRefusesAGapInTheSequence) {
  NaiveDecoder backend(*device_, CacheMode::kNoCache);
  backend.forward({1, 2, 3}, 0);
  EXPECT_THROW(backend.forward({4}, 5), InvalidArgument);
  EXPECT_THROW(parse_cache_mode("paged"), InvalidArgument);
  EXPECT_EQ(parse_cache_mode("no-cache"), CacheMode::kNoCache);
}

}  // namespace
}  // namespace nanoserve::engine
