// launch_copy (the bandwidth yardstick of bench_kernels): exact bytes for aligned and
// misaligned pointers and sizes around the 16-byte word, nothing written outside the range.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "kernels/copy.h"
#include "kernels/device_buffer.h"
#include "tests/kernels/kernel_test_support.h"

namespace nanoserve {
namespace {

using Copy = testing::DeviceTest;

TEST_F(Copy, CopiesExactBytesForAnyAlignmentAndSize) {
  constexpr std::size_t kPad = 32;
  for (std::size_t bytes : {1, 15, 16, 17, 4099, 70001}) {
    for (const auto& [dst_offset, src_offset] :
         std::vector<std::pair<std::size_t, std::size_t>>{{0, 0}, {16, 16}, {1, 0}, {0, 3}}) {
      std::vector<unsigned char> src(bytes + kPad);
      for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 7 + 3);
      const std::vector<unsigned char> dst_before(bytes + 2 * kPad, 0xAB);
      const DeviceBuffer<unsigned char> dsrc(src);
      DeviceBuffer<unsigned char> ddst(dst_before);
      launch_copy(ddst.get() + kPad + dst_offset, dsrc.get() + src_offset, bytes, nullptr);
      std::vector<unsigned char> want = dst_before;
      for (std::size_t i = 0; i < bytes; ++i) want[kPad + dst_offset + i] = src[src_offset + i];
      EXPECT_EQ(ddst.to_host(), want) << "bytes=" << bytes << " dst_offset=" << dst_offset
                                      << " src_offset=" << src_offset;
    }
  }
}

TEST_F(Copy, ZeroBytesLaunchesNothingAndNullIsRejected) {
  EXPECT_NO_THROW(launch_copy(nullptr, nullptr, 0, nullptr));
  DeviceBuffer<unsigned char> buf(8);
  EXPECT_THROW(launch_copy(nullptr, buf.get(), 8, nullptr), std::invalid_argument);
  EXPECT_THROW(launch_copy(buf.get(), nullptr, 8, nullptr), std::invalid_argument);
}

}  // namespace
}  // namespace nanoserve
