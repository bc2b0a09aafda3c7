// Block hashing: XXH3 chained through the parent hash.
#include <gtest/gtest.h>

#include <vector>

#include "common/engine/kv/block_hash.h"

namespace nanoserve {
namespace {

TEST(Ch02BlockHash, IsXXH3WithTheParentHashAsSeed) {
  // Published XXH3-64 value of the empty input with seed 0 (xxHash's sanity-check table).
  EXPECT_EQ(engine::xxh3_block_hash(0, nullptr, 0), 0x2D06800538D394C2ull);
}

TEST(Ch02BlockHash, DependsOnTheParentTheTokensAndTheirOrder) {
  const std::vector<int> a = {1, 2, 3, 4};
  const std::vector<int> b = {2, 1, 3, 4};
  const engine::BlockHash h = engine::xxh3_block_hash(engine::kRootBlockHash, a.data(), 4);
  EXPECT_EQ(h, engine::xxh3_block_hash(engine::kRootBlockHash, a.data(), 4));  // deterministic
  EXPECT_NE(h, engine::xxh3_block_hash(engine::kRootBlockHash, b.data(), 4));
  EXPECT_NE(h, engine::xxh3_block_hash(engine::kRootBlockHash + 1, a.data(), 4));
  EXPECT_NE(h, engine::xxh3_block_hash(engine::kRootBlockHash, a.data(), 3));
}

TEST(Ch02BlockHash, ChainsDifferWhenAnEarlierBlockDiffers) {
  const std::vector<int> p1 = {1, 2}, p2 = {1, 3}, child = {9, 9};
  const engine::BlockHash c1 = engine::xxh3_block_hash(engine::xxh3_block_hash(engine::kRootBlockHash, p1.data(), 2),
                                       child.data(), 2);
  const engine::BlockHash c2 = engine::xxh3_block_hash(engine::xxh3_block_hash(engine::kRootBlockHash, p2.data(), 2),
                                       child.data(), 2);
  EXPECT_NE(c1, c2);
}

}  // namespace
}  // namespace nanoserve
