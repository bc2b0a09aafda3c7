// Packing integer codes into bytes (common/quant/packing.h): the documented nibble order,
// round trips over odd widths, and bad input.
#include <gtest/gtest.h>

#include "common/error.h"
#include "common/quant/packing.h"

namespace nanoserve::quant {
namespace {

TEST(QuantPacking, Int4PutsEvenColumnInLowNibbleAndOddColumnInHighNibble) {
  // Row 0: codes 1 2 3 -> bytes 0x21, 0x03 (odd width: the last high nibble stays 0).
  // Row 1: codes 15 0 9 -> bytes 0x0F, 0x09.
  const std::vector<uint8_t> codes = {1, 2, 3, 15, 0, 9};
  const std::vector<uint8_t> packed = pack_codes(codes, 2, 3, 4);
  EXPECT_EQ(packed, (std::vector<uint8_t>{0x21, 0x03, 0x0F, 0x09}));
  EXPECT_EQ(packed_row_bytes(3, 4), 2);
  EXPECT_EQ(unpack_code(packed.data(), 2, 4, 1, 0), 15);
  EXPECT_EQ(unpack_code(packed.data(), 2, 4, 1, 2), 9);
}

TEST(QuantPacking, Int8StoresOneCodePerByte) {
  const std::vector<uint8_t> codes = {0, 128, 255, 7};
  EXPECT_EQ(pack_codes(codes, 2, 2, 8), codes);
  EXPECT_EQ(packed_row_bytes(5, 8), 5);
}

TEST(QuantPacking, RoundTripsEveryCodeOverOddShapes) {
  for (int bits : {4, 8}) {
    for (int cols : {1, 2, 7, 33, 172}) {
      const int rows = 3;
      std::vector<uint8_t> codes(size_t(rows * cols));
      for (size_t i = 0; i < codes.size(); ++i) codes[i] = uint8_t((i * 37 + 5) % (1u << bits));
      const std::vector<uint8_t> packed = pack_codes(codes, rows, cols, bits);
      EXPECT_EQ(int64_t(packed.size()), rows * packed_row_bytes(cols, bits));
      EXPECT_EQ(unpack_codes(packed, rows, cols, bits), codes) << "bits " << bits << " cols " << cols;
    }
  }
}

TEST(QuantPacking, RejectsCodeOutsideTheBitWidth) {
  EXPECT_THROW(pack_codes({16}, 1, 1, 4), InvalidArgument);
  EXPECT_THROW(pack_codes({1, 2}, 1, 3, 4), InvalidArgument);  // wrong count
  EXPECT_THROW(pack_codes({1}, 1, 1, 3), InvalidArgument);     // unsupported width
}

TEST(QuantPacking, UnpackRejectsWrongByteCount) {
  EXPECT_THROW(unpack_codes({0x21, 0x03, 0x00}, 1, 3, 4), InvalidArgument);
}

}  // namespace
}  // namespace nanoserve::quant
