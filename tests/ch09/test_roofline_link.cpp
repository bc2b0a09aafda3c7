// The link term of the roofline model (common/roofline/link.h): transfers and ring
// all-reduces, checked against the formulas by hand on round numbers.
#include <gtest/gtest.h>

#include <string>

#include "common/error.h"
#include "common/roofline/link.h"

namespace nanoserve::roofline {
namespace {

TEST(RooflineLink, TheTableHoldsTheCitedLinksFastestFirst) {
  ASSERT_EQ(link_keys(), "nvlink4, pcie5, ib400");
  EXPECT_DOUBLE_EQ(find_link("nvlink4").bandwidth, 450e9);  // 900 GB/s counts both directions
  EXPECT_DOUBLE_EQ(find_link("ib400").bandwidth, 50e9);     // 400 Gb/s
  for (const Link& l : links()) EXPECT_NE(std::string(l.source), "") << l.key;
  try {
    find_link("nvlink5");
    ADD_FAILURE() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("unknown link 'nvlink5' (known: nvlink4"),
              std::string::npos);
  }
}

TEST(RooflineLink, ATransferIsLatencyPlusBytesOverTheAchievableBandwidth) {
  const Link& ib = find_link("ib400");
  EXPECT_EQ(transfer_s(ib, 0), 0.0);
  // 40 GB at 50 GB/s × 1.0: 0.8 s + latency; at the default fraction 0.8: 1.0 s + latency.
  EXPECT_DOUBLE_EQ(transfer_s(ib, 40e9, 1.0), 0.8 + ib.latency_s);
  EXPECT_DOUBLE_EQ(transfer_s(ib, 40e9), 1.0 + ib.latency_s);
}

TEST(RooflineLink, ARingAllReduceMovesTwiceTheBufferTimesNMinusOneOverN) {
  const Link& nv = find_link("nvlink4");
  EXPECT_EQ(all_reduce_s(nv, 1e9, 1), 0.0);
  // 4 ranks: 6 steps of latency, 2·3/4 = 1.5 buffers over the link.
  EXPECT_DOUBLE_EQ(all_reduce_s(nv, 450e9, 4, 1.0), 6 * nv.latency_s + 1.5);
  EXPECT_DOUBLE_EQ(all_reduce_s(nv, 450e9, 2, 1.0), 2 * nv.latency_s + 1.0);
}

}  // namespace
}  // namespace nanoserve::roofline
