#pragma once
/// \file
/// \brief `ByteReader`: the bounds-checked cursor every checkpoint loader reads through.
///
/// A corrupt or hostile file must never make a loader read out of bounds, wrap an offset
/// around, or allocate a giant buffer (docs/design.md, "Bad input"). So loaders never touch raw
/// pointers: every read names the field it is reading, and anything that does not fit in the
/// file becomes `LoadError(file, field, "needs N bytes at offset X, but the file has S")`.
/// Sizes computed from header fields go through `checked_mul` / `checked_add` first.
///
/// All checkpoint formats here are little-endian, and so is every machine nanoserve targets
/// (x86-64, AArch64, NVIDIA GPUs), so reads are plain `memcpy`s.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

namespace nanoserve {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "checkpoint readers assume a little-endian host");

/// \brief `a * b`, or `LoadError(file, field, …)` if it overflows 64 bits.
uint64_t checked_mul(uint64_t a, uint64_t b, const std::string& file, std::string_view field);
/// \brief `a + b`, or `LoadError(file, field, …)` if it overflows 64 bits.
uint64_t checked_add(uint64_t a, uint64_t b, const std::string& file, std::string_view field);
/// \brief `x` rounded up to a multiple of `alignment` (> 0), or `LoadError` on overflow.
uint64_t checked_align_up(uint64_t x, uint64_t alignment, const std::string& file,
                          std::string_view field);

/// \brief A cursor over bytes it does not own (a `MappedFile` or a fuzzer's input).
class ByteReader {
 public:
  /// \brief Reads `size` bytes at `data`; `file` names them in error messages.
  ByteReader(const uint8_t* data, size_t size, std::string file)
      : data_(data), size_(size), file_(std::move(file)) {}

  /// \brief The display name used in errors.
  const std::string& file() const { return file_; }
  /// \brief Total number of bytes.
  uint64_t size() const { return size_; }
  /// \brief Position of the cursor.
  uint64_t offset() const { return offset_; }
  /// \brief Bytes left after the cursor.
  uint64_t remaining() const { return size_ - offset_; }

  /// \brief Reads one little-endian value of a trivially copyable type and advances.
  template <typename T>
  T read(std::string_view field) {
    static_assert(std::is_trivially_copyable_v<T>, "read<T> needs a plain value type");
    T value;
    std::memcpy(&value, read_bytes(sizeof(T), field), sizeof(T));
    return value;
  }
  /// \brief Returns a pointer to the next `n` bytes and advances past them.
  const uint8_t* read_bytes(uint64_t n, std::string_view field);
  /// \brief Reads `n` bytes as a string and advances.
  std::string read_string(uint64_t n, std::string_view field);
  /// \brief Advances `n` bytes.
  void skip(uint64_t n, std::string_view field) { read_bytes(n, field); }
  /// \brief Moves the cursor to absolute `offset` (at most `size()`).
  void seek(uint64_t offset, std::string_view field);
  /// \brief Pointer to bytes `[offset, offset + n)` without moving the cursor.
  const uint8_t* bytes_at(uint64_t offset, uint64_t n, std::string_view field) const;

  /// \brief Throws `LoadError(file(), field, detail)`.
  [[noreturn]] void fail(std::string_view field, const std::string& detail) const;

 private:
  const uint8_t* data_;
  uint64_t size_;
  uint64_t offset_ = 0;
  std::string file_;
};

}  // namespace nanoserve
