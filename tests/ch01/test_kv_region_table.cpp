// KVRegionTable: the naive cache's reservation bookkeeping, on hand-computed scripts.
#include <gtest/gtest.h>

#include "common/engine/kv/kv_region_table.h"
#include "common/error.h"

namespace nanoserve::engine {
namespace {

TEST(Ch01KVRegionTable, ReservesWholeSlotsAndCountsOnlyFilledPositions) {
  // 3 regions of 32 positions, 512 bytes per position (synthetic:tiny in fp16).
  KVRegionTable t(3, 32, 512);
  EXPECT_EQ(t.capacity_bytes(), 3 * 32 * 512);
  EXPECT_EQ(t.reserved_bytes(), 0);
  EXPECT_EQ(t.utilization(), 0.0);

  const int a = t.allocate();
  const int b = t.allocate();
  EXPECT_EQ(a, 0);
  EXPECT_EQ(b, 1);
  EXPECT_EQ(t.reserved_bytes(), 2 * 32 * 512);  // reserved in full at request start
  EXPECT_EQ(t.used_bytes(), 0);

  t.write(a, 0, 5);   // a's prompt
  t.write(b, 0, 12);  // b's prompt
  t.write(a, 5, 1);   // a's first decode step
  EXPECT_EQ(t.length(a), 6);
  EXPECT_EQ(t.used_bytes(), (6 + 12) * 512);
  EXPECT_DOUBLE_EQ(t.utilization(), 18.0 / 64.0);

  t.free(a);
  EXPECT_EQ(t.reserved_bytes(), 32 * 512);
  EXPECT_EQ(t.used_bytes(), 12 * 512);
  EXPECT_EQ(t.allocate(), 0);  // the lowest free region, empty again
  EXPECT_EQ(t.length(0), 0);
  EXPECT_EQ(t.allocate(), 2);
  EXPECT_FALSE(t.can_allocate());
  EXPECT_EQ(t.reserved_bytes(), 3 * 32 * 512);
  EXPECT_EQ(t.used_bytes(), 12 * 512);
}

TEST(Ch01KVRegionTable, RewritingFromAnEarlierPositionDropsTheTail) {
  KVRegionTable t(1, 16, 100);
  const int s = t.allocate();
  t.write(s, 0, 10);
  t.write(s, 4, 2);  // e.g. a rejected speculative tail overwritten
  EXPECT_EQ(t.length(s), 6);
  t.truncate(s, 0);
  EXPECT_EQ(t.length(s), 0);
  EXPECT_EQ(t.used_bytes(), 0);
  EXPECT_EQ(t.reserved_bytes(), 1600);
}

TEST(Ch01KVRegionTable, RefusesImpossibleRequestsWithAClearMessage) {
  KVRegionTable t(2, 16, 100);
  const int s = t.allocate();
  t.write(s, 0, 4);
  auto message_of = [](auto&& f) {
    try {
      f();
    } catch (const InvalidArgument& e) {
      return std::string(e.what());
    }
    return std::string("no exception");
  };
  EXPECT_NE(message_of([&] { t.write(s, 6, 1); }).find("without a gap"), std::string::npos);
  EXPECT_NE(message_of([&] { t.write(s, 4, 13); }).find("exceed its 16 reserved positions"),
            std::string::npos);
  EXPECT_NE(message_of([&] { t.write(1, 0, 1); }).find("region 1 is not an allocated region"),
            std::string::npos);
  EXPECT_NE(message_of([&] { t.free(7); }).find("cannot free region 7"), std::string::npos);
  EXPECT_NE(message_of([&] { t.truncate(s, 5); }).find("it holds 4"), std::string::npos);
  t.allocate();
  EXPECT_NE(message_of([&] { t.allocate(); }).find("all 2 regions are reserved"), std::string::npos);
  EXPECT_EQ(t.length(s), 4);  // refused writes changed nothing
  EXPECT_THROW(KVRegionTable(0, 16, 100), InvalidArgument);
}

}  // namespace
}  // namespace nanoserve::engine
