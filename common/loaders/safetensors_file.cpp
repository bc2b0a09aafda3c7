#include "common/loaders/safetensors_file.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/io/json_text.h"
#include "common/loaders/byte_reader.h"

namespace nanoserve {

namespace {

using nlohmann::json;

// The dtypes of the safetensors specification; only the float ones decode for now.
constexpr SafetensorsDtype kDtypes[] = {
    {"F32", 4, decode_f32}, {"F16", 2, decode_f16},  {"BF16", 2, decode_bf16}, {"F64", 8, nullptr},
    {"I64", 8, nullptr},    {"U64", 8, nullptr},     {"I32", 4, nullptr},      {"U32", 4, nullptr},
    {"I16", 2, nullptr},    {"U16", 2, nullptr},     {"I8", 1, nullptr},       {"U8", 1, nullptr},
    {"BOOL", 1, nullptr},   {"F8_E4M3", 1, nullptr}, {"F8_E5M2", 1, nullptr},
};

const SafetensorsDtype* find_dtype(const std::string& name) {
  for (const SafetensorsDtype& d : kDtypes) {
    if (name == d.name) return &d;
  }
  return nullptr;
}

/// A JSON value that must be a non-negative integer.
uint64_t as_u64(const json& j, const ByteReader& in, const std::string& field) {
  if (!j.is_number_unsigned()) in.fail(field, "expected a non-negative integer, got " + j.dump());
  return j.get<uint64_t>();
}

SafetensorsTensor parse_entry(const std::string& name, const json& e, const ByteReader& in,
                              uint64_t data_size) {
  if (!e.is_object()) in.fail(name, "header entry is not a JSON object");
  for (const char* key : {"dtype", "shape", "data_offsets"}) {
    if (!e.contains(key)) in.fail(name, std::string("header entry has no \"") + key + "\"");
  }
  SafetensorsTensor t;
  t.name = name;
  const json& dtype = e["dtype"];
  if (!dtype.is_string()) in.fail(name + ".dtype", "is not a string");
  t.dtype = find_dtype(dtype.get<std::string>());
  if (t.dtype == nullptr) in.fail(name + ".dtype", "unknown dtype " + dtype.dump());
  const json& shape = e["shape"];
  if (!shape.is_array()) in.fail(name + ".shape", "is not an array");
  t.n_elements = 1;
  for (const json& d : shape) {
    t.shape.push_back(as_u64(d, in, name + ".shape"));
    t.n_elements = checked_mul(t.n_elements, t.shape.back(), in.file(), name + ".shape");
  }
  const json& offsets = e["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2) {
    in.fail(name + ".data_offsets", "is not a [begin, end] pair");
  }
  t.begin = as_u64(offsets[0], in, name + ".data_offsets");
  t.end = as_u64(offsets[1], in, name + ".data_offsets");
  if (t.begin > t.end || t.end > data_size) {
    in.fail(name + ".data_offsets", "[" + std::to_string(t.begin) + ", " + std::to_string(t.end) +
                                        ") is not inside the data section of " +
                                        std::to_string(data_size) + " bytes");
  }
  const uint64_t expected = checked_mul(t.n_elements, t.dtype->element_size, in.file(), name);
  if (t.end - t.begin != expected) {
    in.fail(name + ".data_offsets", "spans " + std::to_string(t.end - t.begin) +
                                        " bytes, but shape x " + t.dtype->name + " needs " +
                                        std::to_string(expected));
  }
  return t;
}

}  // namespace

const SafetensorsTensor* SafetensorsFile::find(const std::string& tensor_name) const {
  for (const SafetensorsTensor& t : tensors) {
    if (t.name == tensor_name) return &t;
  }
  return nullptr;
}

SafetensorsFile parse_safetensors(const uint8_t* data, size_t size, const std::string& name) {
  ByteReader in(data, size, name);
  SafetensorsFile f;
  f.name = name;
  const uint64_t header_len = in.read<uint64_t>("header length");
  if (header_len > kSafetensorsMaxHeaderBytes || header_len > in.remaining()) {
    in.fail("header length", std::to_string(header_len) + " bytes, but " +
                                 std::to_string(in.remaining()) +
                                 " bytes follow (and the limit is 100 MB)");
  }
  const auto* text = reinterpret_cast<const char*>(in.read_bytes(header_len, "header"));
  f.data_offset = in.offset();
  f.bytes = in.bytes_at(0, 0, "data");
  const uint64_t data_size = in.remaining();

  json header;
  try {
    header = parse_json_text(std::string_view(text, header_len), name);
  } catch (const LoadError& e) {
    // Reported as the header's problem; the detail keeps the line ("NAME:LINE: json: …").
    in.fail("header", e.what());
  }
  if (!header.is_object()) in.fail("header", "is not a JSON object");
  for (const auto& [key, value] : header.items()) {
    if (key == "__metadata__") {
      if (!value.is_object()) in.fail(key, "is not a JSON object");
      for (const auto& [mk, mv] : value.items()) {
        if (!mv.is_string()) in.fail("__metadata__." + mk, "is not a string");
        f.metadata[mk] = mv.get<std::string>();
      }
      continue;
    }
    f.tensors.push_back(parse_entry(key, value, in, data_size));
  }
  std::sort(
      f.tensors.begin(), f.tensors.end(),
      [](const SafetensorsTensor& a, const SafetensorsTensor& b) { return a.begin < b.begin; });
  for (size_t i = 1; i < f.tensors.size(); ++i) {
    if (f.tensors[i].begin < f.tensors[i - 1].end) {
      in.fail(f.tensors[i].name + ".data_offsets", "overlaps tensor " + f.tensors[i - 1].name);
    }
  }
  return f;
}

std::vector<uint8_t> save_safetensors(const std::vector<SafetensorsEntry>& entries,
                                      const std::map<std::string, std::string>& metadata) {
  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const SafetensorsEntry& e : entries) {
    header[e.name] = {{"dtype", e.dtype},
                      {"shape", e.shape},
                      {"data_offsets", {offset, offset + e.bytes.size()}}};
    offset += e.bytes.size();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // pad so the data section is 8-byte aligned
  std::vector<uint8_t> out;
  out.reserve(8 + text.size() + offset);
  for (int i = 0; i < 8; ++i) out.push_back(uint8_t(uint64_t(text.size()) >> (8 * i)));  // LE
  out.insert(out.end(), text.begin(), text.end());
  for (const SafetensorsEntry& e : entries) out.insert(out.end(), e.bytes.begin(), e.bytes.end());
  return out;
}

}  // namespace nanoserve
