#pragma once
/// \file
/// \brief GGUF metadata: typed key/value pairs (`general.architecture`, `llama.block_count`,
/// `tokenizer.ggml.tokens`, …) and lookups that name the key when a value has the wrong type.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace nanoserve {

/// \brief The value types of the GGUF specification, with their on-disk codes.
enum class GgufType : uint32_t {
  kUint8 = 0,     ///< uint8
  kInt8 = 1,      ///< int8
  kUint16 = 2,    ///< uint16
  kInt16 = 3,     ///< int16
  kUint32 = 4,    ///< uint32
  kInt32 = 5,     ///< int32
  kFloat32 = 6,   ///< float32
  kBool = 7,      ///< one byte, 0 or 1
  kString = 8,    ///< uint64 length + UTF-8 bytes (no terminator)
  kArray = 9,     ///< uint32 element type + uint64 count + elements
  kUint64 = 10,   ///< uint64
  kInt64 = 11,    ///< int64
  kFloat64 = 12,  ///< float64
};

/// \brief Number of GGUF value types (codes 0..12).
inline constexpr uint32_t kGgufTypeCount = 13;

/// \brief "uint8", "string", "array", … for error messages (any code, even an invalid one).
std::string to_string(GgufType type);

struct GgufValue;

/// \brief A GGUF array: all elements share `element_type` (arrays may nest).
struct GgufArray {
  GgufType element_type = GgufType::kUint8;  ///< type of every element
  std::vector<GgufValue> items;              ///< the elements in file order
};

/// \brief One metadata value. The variant's alternatives are in GGUF code order, so
/// `data.index()` is the value's `GgufType`.
struct GgufValue {
  /// \brief The value, as the C++ type matching its GGUF type.
  std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float, bool, std::string,
               GgufArray, uint64_t, int64_t, double>
      data;
  /// \brief The GGUF type of the value.
  GgufType type() const { return static_cast<GgufType>(data.index()); }
  /// \brief The value of any integer type widened to int64; nullopt for non-integers or a
  /// uint64 above INT64_MAX.
  std::optional<int64_t> as_int() const;
  /// \brief The value of a float32/float64 as double; nullopt for other types.
  std::optional<double> as_float() const;
};

/// \brief The metadata map of one GGUF file, with typed getters that throw
/// `LoadError(file, key, "is a string, expected an integer")` on a type mismatch.
class GgufMetadata {
 public:
  /// \brief An empty map for `file` (used in error messages).
  explicit GgufMetadata(std::string file = {}) : file_(std::move(file)) {}

  /// \brief Adds a pair; a key that is already present is a `LoadError`.
  void insert(std::string key, GgufValue value);
  /// \brief The value of `key`, or nullptr.
  const GgufValue* find(const std::string& key) const;
  /// \brief Any integer type, widened; nullopt when absent.
  std::optional<int64_t> get_int(const std::string& key) const;
  /// \brief float32 or float64; nullopt when absent.
  std::optional<double> get_float(const std::string& key) const;
  /// \brief A string; nullopt when absent.
  std::optional<std::string> get_string(const std::string& key) const;
  /// \brief An array; nullptr when absent.
  const GgufArray* get_array(const std::string& key) const;
  /// \brief Every pair, sorted by key.
  const std::map<std::string, GgufValue>& entries() const { return entries_; }
  /// \brief The file the metadata came from.
  const std::string& file() const { return file_; }

 private:
  std::string file_;
  std::map<std::string, GgufValue> entries_;
};

}  // namespace nanoserve
