#include "common/loaders/byte_reader.h"

#include "common/error.h"

namespace nanoserve {

uint64_t checked_mul(uint64_t a, uint64_t b, const std::string& file, std::string_view field) {
  uint64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) {
    throw LoadError(file, std::string(field),
                    std::to_string(a) + " * " + std::to_string(b) + " overflows 64 bits");
  }
  return r;
}

uint64_t checked_add(uint64_t a, uint64_t b, const std::string& file, std::string_view field) {
  uint64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) {
    throw LoadError(file, std::string(field),
                    std::to_string(a) + " + " + std::to_string(b) + " overflows 64 bits");
  }
  return r;
}

uint64_t checked_align_up(uint64_t x, uint64_t alignment, const std::string& file,
                          std::string_view field) {
  if (alignment == 0) throw LoadError(file, std::string(field), "alignment is 0");
  const uint64_t rem = x % alignment;
  return rem == 0 ? x : checked_add(x, alignment - rem, file, field);
}

const uint8_t* ByteReader::read_bytes(uint64_t n, std::string_view field) {
  const uint8_t* p = bytes_at(offset_, n, field);
  offset_ += n;
  return p;
}

std::string ByteReader::read_string(uint64_t n, std::string_view field) {
  const uint8_t* p = read_bytes(n, field);
  return std::string(reinterpret_cast<const char*>(p), n);
}

void ByteReader::seek(uint64_t offset, std::string_view field) {
  if (offset > size_) {
    fail(field, "offset " + std::to_string(offset) + " is past the end of the file (" +
                    std::to_string(size_) + " bytes)");
  }
  offset_ = offset;
}

const uint8_t* ByteReader::bytes_at(uint64_t offset, uint64_t n, std::string_view field) const {
  // Written as two comparisons so that offset + n cannot wrap around.
  if (offset > size_ || n > size_ - offset) {
    fail(field, "needs " + std::to_string(n) + " bytes at offset " + std::to_string(offset) +
                    ", but the file has " + std::to_string(size_) + " bytes");
  }
  return data_ + offset;
}

void ByteReader::fail(std::string_view field, const std::string& detail) const {
  throw LoadError(file_, std::string(field), detail);
}

}  // namespace nanoserve
