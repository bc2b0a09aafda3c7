// The bounds-checked reader, checked arithmetic, fp16/bf16 conversion and MappedFile that
// every loader stands on.
#include <gtest/gtest.h>

#include <Eigen/Core>
#include <cmath>
#include <filesystem>
#include <limits>

#include "common/error.h"
#include "common/loaders/byte_reader.h"
#include "common/loaders/half_float.h"
#include "common/loaders/mapped_file.h"
#include "common/loaders/tensor_decode.h"
#include "loader_test_files.h"
#include "test_support.h"

namespace nanoserve {
namespace {

using testing::expect_load_error;

TEST(ByteReader, ReadsLittleEndianValuesInOrder) {
  const std::vector<uint8_t> bytes = {0x01, 0x02, 0x03, 0x04, 0xFF, 'h', 'i'};
  ByteReader in(bytes.data(), bytes.size(), "mem");
  EXPECT_EQ(in.read<uint32_t>("a"), 0x04030201u);
  EXPECT_EQ(in.read<int8_t>("b"), -1);
  EXPECT_EQ(in.read_string(2, "c"), "hi");
  EXPECT_EQ(in.remaining(), 0u);
}

TEST(ByteReader, ReadingPastTheEndNamesFileFieldAndOffset) {
  const std::vector<uint8_t> bytes(6, 0);
  ByteReader in(bytes.data(), bytes.size(), "x.bin");
  in.read<uint32_t>("first");
  const std::string msg =
      expect_load_error([&] { in.read<uint32_t>("header.dim"); }, "x.bin", "header.dim",
                        "needs 4 bytes at offset 4, but the file has 6 bytes");
  EXPECT_EQ(in.offset(), 4u) << "a failed read must not move the cursor";
}

TEST(ByteReader, HugeLengthsCannotWrapTheOffsetAround) {
  const std::vector<uint8_t> bytes(16, 0);
  ByteReader in(bytes.data(), bytes.size(), "mem");
  in.read<uint64_t>("a");
  // offset 8 + (2^64 - 4) wraps to 4 in unchecked arithmetic; it must be rejected.
  expect_load_error([&] { in.read_bytes(std::numeric_limits<uint64_t>::max() - 3, "len"); }, "mem",
                    "len");
  expect_load_error([&] { in.bytes_at(std::numeric_limits<uint64_t>::max(), 2, "at"); }, "mem",
                    "at");
  expect_load_error([&] { in.seek(17, "seek"); }, "mem", "seek");
  EXPECT_NO_THROW(in.seek(16, "seek"));
}

TEST(ByteReader, EmptyInputFailsCleanly) {
  ByteReader in(nullptr, 0, "empty");
  EXPECT_EQ(in.read_bytes(0, "nothing"), nullptr);
  expect_load_error([&] { in.read<uint8_t>("magic"); }, "empty", "magic");
}

TEST(CheckedArithmetic, OverflowIsALoadErrorNamingTheField) {
  const uint64_t big = uint64_t(1) << 40;
  EXPECT_EQ(checked_mul(big, 1024, "f", "n"), uint64_t(1) << 50);
  expect_load_error([&] { checked_mul(big, big, "f", "dims"); }, "f", "dims", "overflows");
  expect_load_error([&] { checked_add(~uint64_t(0), 1, "f", "offset"); }, "f", "offset");
  EXPECT_EQ(checked_align_up(14152, 32, "f", "a"), 14176u);
  EXPECT_EQ(checked_align_up(64, 32, "f", "a"), 64u);
  expect_load_error([&] { checked_align_up(~uint64_t(0) - 2, 32, "f", "data"); }, "f", "data");
}

TEST(HalfFloat, KnownFp16Patterns) {
  EXPECT_EQ(fp16_to_fp32(0x3C00), 1.0f);
  EXPECT_EQ(fp16_to_fp32(0xC000), -2.0f);
  EXPECT_EQ(fp16_to_fp32(0x7BFF), 65504.0f);                  // largest finite fp16
  EXPECT_EQ(fp16_to_fp32(0x0400), std::ldexp(1.0f, -14));     // smallest normal
  EXPECT_EQ(fp16_to_fp32(0x0001), std::ldexp(1.0f, -24));     // smallest subnormal
  EXPECT_EQ(fp16_to_fp32(0x3555), (1024 + 0x155) / 4096.0f);  // 1.0101010101b * 2^-2
  EXPECT_TRUE(std::signbit(fp16_to_fp32(0x8000)));
  EXPECT_EQ(fp16_to_fp32(0x7C00), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(fp16_to_fp32(0x7E00)));
}

TEST(HalfFloat, EveryFp16PatternMatchesEigenHalf) {
  for (uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    const float got = fp16_to_fp32(uint16_t(bits));
    const float want = float(Eigen::numext::bit_cast<Eigen::half>(uint16_t(bits)));
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << std::hex << bits;
    } else {
      ASSERT_EQ(Eigen::numext::bit_cast<uint32_t>(got), Eigen::numext::bit_cast<uint32_t>(want))
          << std::hex << bits;
    }
  }
}

TEST(HalfFloat, EveryBf16PatternMatchesEigenBfloat16) {
  EXPECT_EQ(bf16_to_fp32(0x3F80), 1.0f);
  EXPECT_EQ(bf16_to_fp32(0xC0A0), -5.0f);
  for (uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    const float got = bf16_to_fp32(uint16_t(bits));
    const float want = float(Eigen::numext::bit_cast<Eigen::bfloat16>(uint16_t(bits)));
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << std::hex << bits;
    } else {
      ASSERT_EQ(got, want) << std::hex << bits;
    }
  }
}

TEST(DecodeTensor, DecodesUnalignedFp16) {
  // One padding byte in front: the decoder must not assume 2-byte alignment.
  const std::vector<uint8_t> bytes = {0xAA, 0x00, 0x3C, 0x00, 0xC0};
  const std::vector<float> got = decode_tensor(decode_f16, bytes.data() + 1, 2, "f", "t");
  EXPECT_EQ(got, (std::vector<float>{1.0f, -2.0f}));
}

TEST(DecodeTensor, NonFiniteValueNamesTensorAndElement) {
  const float values[3] = {1.0f, std::numeric_limits<float>::quiet_NaN(), 2.0f};
  expect_load_error(
      [&] {
        decode_tensor(decode_f32, reinterpret_cast<const uint8_t*>(values), 3, "m.bin", "wq");
      },
      "m.bin", "wq", "element 1 is NaN");
  const float inf[1] = {-std::numeric_limits<float>::infinity()};
  expect_load_error(
      [&] { decode_tensor(decode_f32, reinterpret_cast<const uint8_t*>(inf), 1, "m.bin", "wk"); },
      "m.bin", "wk", "element 0 is infinite");
}

TEST(MappedFile, MapsTheFileBytes) {
  const std::vector<uint8_t> bytes = {1, 2, 3, 4, 5};
  const std::string path = testing::write_temp_file("mapped.bin", bytes);
  const MappedFile f(path);
  ASSERT_EQ(f.size(), 5u);
  EXPECT_EQ(std::vector<uint8_t>(f.data(), f.data() + f.size()), bytes);
  MappedFile moved = MappedFile(path);
  EXPECT_EQ(moved.size(), 5u);
}

TEST(MappedFile, EmptyFileMapsToNothing) {
  const MappedFile f(testing::write_temp_file("empty.bin", {}));
  EXPECT_EQ(f.size(), 0u);
  EXPECT_EQ(f.data(), nullptr);
}

TEST(MappedFile, MissingFileOrDirectoryIsALoadError) {
  const std::string missing = ::nanoserve::testing::temp_dir() + "no_such_file.bin";
  expect_load_error([&] { MappedFile f(missing); }, missing, "file", "cannot open");
  const std::string dir = ::nanoserve::testing::temp_dir() + "a_directory";
  std::filesystem::create_directories(dir);
  expect_load_error([&] { MappedFile f(dir); }, dir, "file", "directory");
}

}  // namespace
}  // namespace nanoserve
