// FreeBlockQueue: the intrusive LRU list under the block pool.
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "common/engine/kv/free_block_queue.h"

namespace nanoserve {
namespace {

struct QueueFixture {
  std::vector<engine::KVCacheBlock> blocks;
  engine::FreeBlockQueue queue;
  explicit QueueFixture(int n) : blocks(make(n)), queue(pointers()) {}
  static std::vector<engine::KVCacheBlock> make(int n) {
    std::vector<engine::KVCacheBlock> b(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) b[static_cast<size_t>(i)].block_id = i;
    return b;
  }
  std::vector<engine::KVCacheBlock*> pointers() {
    std::vector<engine::KVCacheBlock*> p;
    for (engine::KVCacheBlock& b : blocks) p.push_back(&b);
    return p;
  }
  engine::KVCacheBlock* at(int i) { return &blocks[static_cast<size_t>(i)]; }
};

TEST(Ch02FreeBlockQueue, StartsInTheGivenOrder) {
  QueueFixture f(4);
  EXPECT_EQ(f.queue.size(), 4);
  EXPECT_EQ(f.queue.block_ids(), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(f.queue.check_links(), "");
}

TEST(Ch02FreeBlockQueue, PopleftTakesTheHeadAndAppendGoesToTheTail) {
  QueueFixture f(4);
  EXPECT_EQ(f.queue.popleft()->block_id, 0);
  EXPECT_EQ(f.queue.popleft()->block_id, 1);
  f.queue.append(f.at(0));
  EXPECT_EQ(f.queue.block_ids(), (std::vector<int>{2, 3, 0}));
  EXPECT_FALSE(engine::FreeBlockQueue::is_linked(*f.at(1)));
  EXPECT_EQ(f.queue.check_links(), "");
}

TEST(Ch02FreeBlockQueue, RemovesFromTheMiddleAndBothEnds) {
  QueueFixture f(5);
  f.queue.remove(f.at(2));
  EXPECT_EQ(f.queue.block_ids(), (std::vector<int>{0, 1, 3, 4}));
  f.queue.remove(f.at(0));
  f.queue.remove(f.at(4));
  EXPECT_EQ(f.queue.block_ids(), (std::vector<int>{1, 3}));
  EXPECT_EQ(f.queue.size(), 2);
  EXPECT_EQ(f.at(2)->prev_free, nullptr);
  EXPECT_EQ(f.at(2)->next_free, nullptr);
  EXPECT_EQ(f.queue.check_links(), "");
}

TEST(Ch02FreeBlockQueue, EmptiesAndRefillsThroughTheSentinels) {
  QueueFixture f(2);
  f.queue.remove(f.at(1));
  f.queue.popleft();
  EXPECT_TRUE(f.queue.empty());
  EXPECT_EQ(f.queue.block_ids(), std::vector<int>{});
  EXPECT_THROW(f.queue.popleft(), std::logic_error);
  f.queue.append(f.at(1));
  f.queue.append(f.at(0));
  EXPECT_EQ(f.queue.block_ids(), (std::vector<int>{1, 0}));
  EXPECT_EQ(f.queue.check_links(), "");
}

TEST(Ch02FreeBlockQueue, RejectsAppendingALinkedBlockAndRemovingAnUnlinkedOne) {
  QueueFixture f(3);
  EXPECT_THROW(f.queue.append(f.at(1)), std::logic_error);
  engine::KVCacheBlock* b = f.queue.popleft();
  EXPECT_THROW(f.queue.remove(b), std::logic_error);
  EXPECT_EQ(f.queue.block_ids(), (std::vector<int>{1, 2}));
  EXPECT_EQ(f.queue.check_links(), "");
}

TEST(Ch02FreeBlockQueue, CheckLinksNamesABrokenBackLink) {
  QueueFixture f(3);
  f.at(2)->prev_free = f.at(0);  // corrupt: 1 → 2 but 2's prev says 0
  EXPECT_NE(f.queue.check_links().find("block 2.prev_free"), std::string::npos)
      << f.queue.check_links();
  f.at(2)->prev_free = f.at(1);
  EXPECT_EQ(f.queue.check_links(), "");
}

TEST(Ch02FreeBlockQueue, SurvivesBeingMoved) {
  QueueFixture f(3);
  engine::FreeBlockQueue moved = std::move(f.queue);
  moved.append(moved.popleft());
  EXPECT_EQ(moved.block_ids(), (std::vector<int>{1, 2, 0}));
  EXPECT_EQ(moved.check_links(), "");
}

}  // namespace
}  // namespace nanoserve
