#include "common/loaders/gguf_metadata.h"

#include <limits>

#include "common/error.h"

namespace nanoserve {

std::string to_string(GgufType type) {
  static constexpr const char* kNames[kGgufTypeCount] = {
      "uint8", "int8",   "uint16", "int16",  "uint32", "int32",  "float32",
      "bool",  "string", "array",  "uint64", "int64",  "float64"};
  const auto code = static_cast<uint32_t>(type);
  return code < kGgufTypeCount ? kNames[code] : "invalid type " + std::to_string(code);
}

std::optional<int64_t> GgufValue::as_int() const {
  return std::visit(
      [](const auto& v) -> std::optional<int64_t> {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, uint64_t>) {
          if (v > uint64_t(std::numeric_limits<int64_t>::max())) return std::nullopt;
          return int64_t(v);
        } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
          return int64_t(v);
        } else {
          return std::nullopt;
        }
      },
      data);
}

std::optional<double> GgufValue::as_float() const {
  if (const float* f = std::get_if<float>(&data)) return double(*f);
  if (const double* d = std::get_if<double>(&data)) return *d;
  return std::nullopt;
}

void GgufMetadata::insert(std::string key, GgufValue value) {
  if (entries_.count(key) != 0) throw LoadError(file_, key, "appears twice in the metadata");
  entries_.emplace(std::move(key), std::move(value));
}

const GgufValue* GgufMetadata::find(const std::string& key) const {
  const auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : &it->second;
}

std::optional<int64_t> GgufMetadata::get_int(const std::string& key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return std::nullopt;
  const std::optional<int64_t> i = v->as_int();
  if (!i) {
    throw LoadError(file_, key,
                    "is a " + to_string(v->type()) + ", expected an integer in int64 range");
  }
  return i;
}

std::optional<double> GgufMetadata::get_float(const std::string& key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return std::nullopt;
  const std::optional<double> f = v->as_float();
  if (!f) throw LoadError(file_, key, "is a " + to_string(v->type()) + ", expected a float");
  return f;
}

std::optional<std::string> GgufMetadata::get_string(const std::string& key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return std::nullopt;
  const std::string* s = std::get_if<std::string>(&v->data);
  if (s == nullptr)
    throw LoadError(file_, key, "is a " + to_string(v->type()) + ", expected a string");
  return *s;
}

const GgufArray* GgufMetadata::get_array(const std::string& key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return nullptr;
  const GgufArray* a = std::get_if<GgufArray>(&v->data);
  if (a == nullptr)
    throw LoadError(file_, key, "is a " + to_string(v->type()) + ", expected an array");
  return a;
}

}  // namespace nanoserve
