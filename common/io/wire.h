#pragma once
/// \file
/// \brief `WireWriter` / `WireReader`: plain values, strings and vectors packed into bytes and
/// read back, for the messages ranks exchange (chapter 9: a prefill instance's hand-off header,
/// tensor parallelism's plan of a pass). Host byte order: every rank of a run is the same
/// program on the same kind of machine.

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "common/error.h"

namespace nanoserve {

/// \brief Appends values to a byte vector.
///
/// \par Example
/// \snippet tests/ch09/test_examples_disagg.cpp Wire
class WireWriter {
 public:
  /// \brief A trivially copyable value, as its bytes.
  template <typename T>
  void put(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>, "WireWriter::put: not a plain value");
    const auto* p = reinterpret_cast<const std::uint8_t*>(&v);
    bytes_.insert(bytes_.end(), p, p + sizeof v);
  }
  /// \brief A string: its length (uint32), then its bytes.
  void put_string(const std::string& s) {
    put(static_cast<std::uint32_t>(s.size()));
    bytes_.insert(bytes_.end(), s.begin(), s.end());
  }
  /// \brief A vector of plain values: its length (uint64), then the elements.
  template <typename T>
  void put_vector(const std::vector<T>& v) {
    static_assert(std::is_trivially_copyable_v<T>, "WireWriter::put_vector: not plain values");
    put(static_cast<std::uint64_t>(v.size()));
    const auto* p = reinterpret_cast<const std::uint8_t*>(v.data());
    bytes_.insert(bytes_.end(), p, p + v.size() * sizeof(T));
  }
  /// \brief The bytes so far (moved out).
  std::vector<std::uint8_t> take() { return std::move(bytes_); }

 private:
  std::vector<std::uint8_t> bytes_;
};

/// \brief Reads back what a `WireWriter` wrote; every read past the end throws
/// `InvalidArgument` naming `what` (the message kind).
///
/// \par Example
/// \snippet tests/ch09/test_examples_disagg.cpp Wire
class WireReader {
 public:
  /// \brief Reads `bytes` (which must outlive the reader); `what` names the message in errors.
  WireReader(const std::vector<std::uint8_t>& bytes, std::string what)
      : b_(bytes), what_(std::move(what)) {}
  /// \brief The next plain value.
  template <typename T>
  T get() {
    static_assert(std::is_trivially_copyable_v<T>, "WireReader::get: not a plain value");
    T v;
    need(sizeof v);
    std::memcpy(&v, b_.data() + at_, sizeof v);
    at_ += sizeof v;
    return v;
  }
  /// \brief The next string.
  std::string get_string() {
    const auto n = get<std::uint32_t>();
    need(n);
    std::string s(reinterpret_cast<const char*>(b_.data() + at_), n);
    at_ += n;
    return s;
  }
  /// \brief The next vector of plain values.
  template <typename T>
  std::vector<T> get_vector() {
    const auto n = get<std::uint64_t>();
    if (n > (b_.size() - at_) / sizeof(T)) need(b_.size() - at_ + 1);
    std::vector<T> v(static_cast<std::size_t>(n));
    std::memcpy(v.data(), b_.data() + at_, v.size() * sizeof(T));
    at_ += v.size() * sizeof(T);
    return v;
  }
  /// \brief Throws `InvalidArgument` unless every byte was read.
  void expect_end() const {
    if (at_ != b_.size()) {
      throw InvalidArgument(what_ + ": " + std::to_string(b_.size() - at_) + " bytes too many");
    }
  }

 private:
  void need(std::size_t n) const {
    if (n > b_.size() - at_) {
      throw InvalidArgument(what_ + ": truncated (" + std::to_string(b_.size()) + " bytes)");
    }
  }
  const std::vector<std::uint8_t>& b_;
  std::string what_;
  std::size_t at_ = 0;
};

}  // namespace nanoserve
