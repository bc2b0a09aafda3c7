// The kv-memory calculator against published KV sizes of real models.
#include <gtest/gtest.h>

#include "common/engine/kv/kv_memory.h"
#include "common/harness/request_mix.h"
#include "common/error.h"
#include "common/loaders/synthetic_model.h"

namespace nanoserve::engine {
namespace {

// Published shapes (Touvron et al. 2023, Llama 2 paper Table 1 + the released configs; Meta's
// Llama 3 configs): Llama-2-7B has 32 layers × 32 KV heads × head_dim 128, so fp16 KV is
// 2·32·32·128·2 = 524,288 bytes = 0.5 MiB per token — the figure usually quoted for it, and
// 2 GiB for a 4096-token context. Llama-2-70B and both Llama-3 models use GQA with 8 KV heads.
TEST(Ch01KvMemory, MatchesTheHandComputedSizesOfRealModels) {
  struct Case {
    const char* name;
    std::int64_t fp16_per_token;
  };
  const Case cases[] = {
      {"llama2-7b", 2LL * 32 * 32 * 128 * 2},   // 512 KiB
      {"llama2-13b", 2LL * 40 * 40 * 128 * 2},  // 800 KiB
      {"llama2-70b", 2LL * 80 * 8 * 128 * 2},   // 320 KiB: GQA, 64 query heads share 8 KV heads
      {"llama3-8b", 2LL * 32 * 8 * 128 * 2},    // 128 KiB
      {"llama3-70b", 2LL * 80 * 8 * 128 * 2},   // 320 KiB
  };
  for (const Case& c : cases) {
    const KvMemoryEstimate e = estimate_kv_memory(synthetic_config(c.name), 2, 4096, 16);
    EXPECT_EQ(e.bytes_per_token, c.fp16_per_token) << c.name;
    EXPECT_EQ(e.bytes_per_request, c.fp16_per_token * 4096) << c.name;
    EXPECT_EQ(e.bytes_per_batch, c.fp16_per_token * 4096 * 16) << c.name;
    EXPECT_EQ(estimate_kv_memory(synthetic_config(c.name), 4, 4096, 1).bytes_per_token,
              2 * c.fp16_per_token) << c.name;
  }
  EXPECT_EQ(estimate_kv_memory(synthetic_config("llama2-7b"), 2, 4096, 1).bytes_per_request,
            2LL << 30);  // exactly 2 GiB
}

TEST(Ch01KvMemory, TheFormulaWithoutGqaOverstatesGroupedQueryModels) {
  // Using the width (n_heads × head_dim = 8192) instead of n_kv_heads × head_dim (1024) for
  // Llama-2-70B claims 8× the true size; for Llama-2-7B (no GQA) both agree.
  const KvMemoryEstimate big = estimate_kv_memory(synthetic_config("llama2-70b"), 2, 4096, 1);
  EXPECT_EQ(big.bytes_per_token_without_gqa, 8 * big.bytes_per_token);
  const KvMemoryEstimate small = estimate_kv_memory(synthetic_config("llama2-7b"), 2, 4096, 1);
  EXPECT_EQ(small.bytes_per_token_without_gqa, small.bytes_per_token);
}

TEST(Ch01KvMemory, RejectsNonPositiveSizes) {
  EXPECT_THROW(estimate_kv_memory(synthetic_config("tiny"), 0, 4096, 1), InvalidArgument);
  EXPECT_THROW(estimate_kv_memory(synthetic_config("tiny"), 2, 0, 1), InvalidArgument);
  EXPECT_THROW(estimate_kv_memory(synthetic_config("tiny"), 2, 4096, 0), InvalidArgument);
}

TEST(Ch01RequestMix, EveryRequestFitsTheSmallestContextOfTheProject) {
  int positions = 0;
  for (const harness::RequestShape& r : harness::mixed_length_requests()) {
    EXPECT_GE(r.prompt_tokens, 1) << r.name;
    EXPECT_GE(r.output_tokens, 1) << r.name;
    EXPECT_LE(r.prompt_tokens + r.output_tokens, synthetic_config("tiny").max_seq_len) << r.name;
    positions += r.prompt_tokens + r.output_tokens;
  }
  EXPECT_EQ(positions, 976);  // as documented in request_mix.h
}

}  // namespace
}  // namespace nanoserve::engine
