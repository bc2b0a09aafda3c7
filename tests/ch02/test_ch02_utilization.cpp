// The `utilization` scenario of the chapter-2 program: naive vs paged KV under one budget,
// checked against numbers worked out by hand from the definitions (not from the code's output).
#include <gtest/gtest.h>

#include "chapters/ch02_paged_kv_cache/utilization.h"
#include "common/error.h"

namespace nanoserve::ch02 {
namespace {

// Two requests, 1 byte per position, regions of 16 positions, blocks of 4:
//   a: prompt 3, output 3 → 5 positions cached (the last token is never fed back)
//   b: prompt 10, output 1 → 10 positions cached
// Naive: 2 regions × 16 = 32 reserved, 15 used.  Paged: a 2 blocks (8), b 3 blocks (12) = 20.
// Over time (step 0 writes the prompts, b leaves after step 0, a after step 2):
//   naive used 13, 4, 5 of 32, 16, 16;  paged used 13, 4, 5 of 16 (1 + 3 blocks), 4, 8.
TEST(Ch02Utilization, TinyWorkloadMatchesHandComputedNumbers) {
  const std::vector<harness::RequestShape> reqs = {{"a", 3, 3}, {"b", 10, 1}};
  UtilizationConfig c;
  c.max_seq_len = 16;
  c.regions = 2;
  c.block_size = 4;
  c.bytes_per_token = 1;
  const std::vector<CacheUtilization> r = replay_utilization(reqs, c);
  ASSERT_EQ(r.size(), 2u);
  const CacheUtilization& naive = r[0];
  const CacheUtilization& paged = r[1];
  EXPECT_EQ(naive.capacity_bytes, 32);
  EXPECT_EQ(naive.reserved_bytes, 32);
  EXPECT_EQ(naive.used_bytes, 15);
  EXPECT_EQ(naive.wasted_bytes(), 17);
  EXPECT_DOUBLE_EQ(naive.at_completion, 15.0 / 32.0);
  EXPECT_EQ(naive.used_over_time, (std::vector<std::int64_t>{13, 4, 5}));
  EXPECT_EQ(naive.reserved_over_time, (std::vector<std::int64_t>{32, 16, 16}));
  EXPECT_DOUBLE_EQ(naive.time_average, 22.0 / 64.0);
  EXPECT_EQ(naive.fit_at_once, 2);

  EXPECT_EQ(paged.capacity_bytes, 32);  // 8 blocks of 4
  EXPECT_EQ(paged.request_reserved, (std::vector<std::int64_t>{8, 12}));
  EXPECT_EQ(paged.reserved_bytes, 20);
  EXPECT_EQ(paged.used_bytes, 15);
  EXPECT_EQ(paged.wasted_bytes(), 5);
  EXPECT_EQ(paged.table_entries, 5);
  EXPECT_DOUBLE_EQ(paged.at_completion, 15.0 / 20.0);
  EXPECT_EQ(paged.reserved_over_time, (std::vector<std::int64_t>{16, 4, 8}));
  EXPECT_DOUBLE_EQ(paged.time_average, 22.0 / 28.0);
  // 8 blocks, admitted in order a(2) b(3) a(2) = 7; the next b needs 3 of the 1 left.
  EXPECT_EQ(paged.fit_at_once, 3);
}

// Chapter 1's mix in 8 regions of 512 positions, blocks of 16. Positions cached per request
// (prompt + output − 1): 15 63 161 143 111 111 119 245 = 968; blocks ceil(x / 16):
// 1 4 11 9 7 7 8 16 = 63 = 1008 positions. 256 blocks hold 4 rounds of the mix (252) and one
// more greeting (1 block); the next request, a question, needs 4 of the 3 left.
TEST(Ch02Utilization, ChapterOneMixIsOverNinetyFivePercentPaged) {
  UtilizationConfig c;
  c.max_seq_len = 512;
  c.regions = 8;
  c.block_size = 16;
  c.bytes_per_token = 1280;  // stories260K in fp32: 2 × 5 layers × 4 KV heads × 8 × 4 bytes
  const std::vector<CacheUtilization> r = replay_utilization(harness::mixed_length_requests(), c);
  EXPECT_EQ(r[0].used_bytes, 968 * 1280);
  EXPECT_EQ(r[0].reserved_bytes, 8 * 512 * 1280);
  EXPECT_EQ(r[1].reserved_bytes, 1008 * 1280);
  EXPECT_NEAR(r[0].at_completion, 968.0 / 4096.0, 1e-12);
  EXPECT_NEAR(r[1].at_completion, 968.0 / 1008.0, 1e-12);
  EXPECT_GE(r[1].at_completion, 0.95);
  EXPECT_GT(r[1].time_average, r[0].time_average);
  EXPECT_EQ(r[0].fit_at_once, 8);
  EXPECT_EQ(r[1].fit_at_once, 33);
  EXPECT_EQ(r[1].table_entries, 63);
}

// Block size 1 wastes nothing: every reserved position holds a key and a value.
TEST(Ch02Utilization, BlockSizeOneWastesNothing) {
  UtilizationConfig c;
  c.max_seq_len = 256;
  c.regions = 8;
  c.block_size = 1;
  const CacheUtilization paged = replay_utilization(harness::mixed_length_requests(), c)[1];
  EXPECT_EQ(paged.wasted_bytes(), 0);
  EXPECT_DOUBLE_EQ(paged.at_completion, 1.0);
  EXPECT_DOUBLE_EQ(paged.time_average, 1.0);
  // 2048 positions: 2 rounds of the mix (1936), a greeting (15) and a question (63) leave 34,
  // too few for the story's 161.
  EXPECT_EQ(paged.fit_at_once, 2 * 8 + 2);
}

TEST(Ch02Utilization, RejectsRequestsThatDoNotFit) {
  UtilizationConfig c;
  c.max_seq_len = 100;  // the long story needs 245 positions
  EXPECT_THROW(replay_utilization(harness::mixed_length_requests(), c), InvalidArgument);
  c.max_seq_len = 512;
  c.regions = 4;  // 8 requests cannot all start in 4 naive regions
  EXPECT_THROW(replay_utilization(harness::mixed_length_requests(), c), InvalidArgument);
  c.regions = 8;
  c.block_size = 0;
  EXPECT_THROW(replay_utilization(harness::mixed_length_requests(), c), InvalidArgument);
}

}  // namespace
}  // namespace nanoserve::ch02
