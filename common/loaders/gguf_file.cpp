#include "common/loaders/gguf_file.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "common/error.h"
#include "common/loaders/byte_reader.h"

namespace nanoserve {

namespace {

// Smallest possible encodings, used to bound counts by the bytes left before reserving.
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;                  // empty key, type, 1-byte value
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;  // empty name, 1 dim, type, offset

uint64_t min_value_bytes(GgufType type) {
  switch (type) {
    case GgufType::kUint8:
    case GgufType::kInt8:
    case GgufType::kBool: return 1;
    case GgufType::kUint16:
    case GgufType::kInt16: return 2;
    case GgufType::kUint32:
    case GgufType::kInt32:
    case GgufType::kFloat32: return 4;
    case GgufType::kUint64:
    case GgufType::kInt64:
    case GgufType::kFloat64: return 8;
    case GgufType::kString: return 8;
    case GgufType::kArray: return 4 + 8;
  }
  return 1;
}

class GgufParser {
 public:
  GgufParser(const uint8_t* data, size_t size, const std::string& name) : in_(data, size, name) {}

  GgufFile parse();

 private:
  std::string read_string(const std::string& field) {
    const uint64_t n = in_.read<uint64_t>(field);
    return in_.read_string(n, field);  // bounds-checked before the string is allocated
  }
  GgufType read_type(const std::string& field);
  GgufValue read_value(GgufType type, const std::string& key, int depth);
  GgufArray read_array(const std::string& key, int depth);
  GgufTensorInfo read_tensor_info(uint64_t index);
  void check_counts(uint64_t count, uint64_t min_bytes, const char* field);
  void check_tensor_ranges(GgufFile& f);

  ByteReader in_;
};

void GgufParser::check_counts(uint64_t count, uint64_t min_bytes, const char* field) {
  if (count > in_.remaining() / min_bytes) {
    in_.fail(field, std::to_string(count) + " entries cannot fit in the " +
                        std::to_string(in_.remaining()) + " bytes left in the file");
  }
}

GgufType GgufParser::read_type(const std::string& field) {
  const uint32_t code = in_.read<uint32_t>(field);
  if (code >= kGgufTypeCount) in_.fail(field, "unknown GGUF value type " + std::to_string(code));
  return static_cast<GgufType>(code);
}

GgufValue GgufParser::read_value(GgufType type, const std::string& key, int depth) {
  GgufValue v;
  switch (type) {
    case GgufType::kUint8: v.data = in_.read<uint8_t>(key); break;
    case GgufType::kInt8: v.data = in_.read<int8_t>(key); break;
    case GgufType::kUint16: v.data = in_.read<uint16_t>(key); break;
    case GgufType::kInt16: v.data = in_.read<int16_t>(key); break;
    case GgufType::kUint32: v.data = in_.read<uint32_t>(key); break;
    case GgufType::kInt32: v.data = in_.read<int32_t>(key); break;
    case GgufType::kFloat32: v.data = in_.read<float>(key); break;
    case GgufType::kUint64: v.data = in_.read<uint64_t>(key); break;
    case GgufType::kInt64: v.data = in_.read<int64_t>(key); break;
    case GgufType::kFloat64: v.data = in_.read<double>(key); break;
    case GgufType::kBool: {
      const uint8_t b = in_.read<uint8_t>(key);
      if (b > 1) in_.fail(key, "bool value " + std::to_string(b) + " is neither 0 nor 1");
      v.data = b == 1;
      break;
    }
    case GgufType::kString: v.data = read_string(key); break;
    case GgufType::kArray: v.data = read_array(key, depth + 1); break;
  }
  return v;
}

GgufArray GgufParser::read_array(const std::string& key, int depth) {
  if (depth > kGgufMaxArrayDepth) {
    in_.fail(key, "arrays nested deeper than " + std::to_string(kGgufMaxArrayDepth));
  }
  GgufArray a;
  a.element_type = read_type(key);
  const uint64_t count = in_.read<uint64_t>(key);
  check_counts(count, min_value_bytes(a.element_type), key.c_str());
  a.items.reserve(count);
  for (uint64_t i = 0; i < count; ++i) a.items.push_back(read_value(a.element_type, key, depth));
  return a;
}

GgufTensorInfo GgufParser::read_tensor_info(uint64_t index) {
  const std::string where = "tensor_infos[" + std::to_string(index) + "]";
  GgufTensorInfo t;
  t.name = read_string(where + ".name");
  const uint32_t n_dims = in_.read<uint32_t>(t.name + ".n_dims");
  if (n_dims == 0 || n_dims > kGgufMaxDims) {
    in_.fail(t.name, "n_dims " + std::to_string(n_dims) + " is outside [1, " +
                         std::to_string(kGgufMaxDims) + "]");
  }
  t.n_elements = 1;
  for (uint32_t i = 0; i < n_dims; ++i) {
    const uint64_t d = in_.read<uint64_t>(t.name + ".dims");
    if (d == 0) in_.fail(t.name, "dimension " + std::to_string(i) + " is 0");
    t.dims.push_back(d);
    t.n_elements = checked_mul(t.n_elements, d, in_.file(), t.name);
  }
  const uint32_t type_id = in_.read<uint32_t>(t.name + ".type");
  t.type = find_ggml_type(type_id);
  if (t.type == nullptr) {
    in_.fail(t.name, "ggml type " + std::to_string(type_id) + " is not in nanoserve's table");
  }
  if (t.dims[0] % t.type->block_size != 0) {
    in_.fail(t.name, "row length " + std::to_string(t.dims[0]) + " is not a multiple of the " +
                         t.type->name + " block size " + std::to_string(t.type->block_size));
  }
  t.n_bytes = checked_mul(t.n_elements / t.type->block_size, t.type->type_size, in_.file(), t.name);
  t.offset = in_.read<uint64_t>(t.name + ".offset");
  return t;
}

void GgufParser::check_tensor_ranges(GgufFile& f) {
  std::vector<const GgufTensorInfo*> by_offset;
  for (const GgufTensorInfo& t : f.tensors) {
    if (t.offset % f.alignment != 0) {
      in_.fail(t.name, "offset " + std::to_string(t.offset) +
                           " is not a multiple of the alignment " + std::to_string(f.alignment));
    }
    const uint64_t begin = checked_add(f.data_offset, t.offset, in_.file(), t.name);
    in_.bytes_at(begin, t.n_bytes, t.name);  // throws when the range leaves the file
    by_offset.push_back(&t);
  }
  // Stable: of two tensors at one offset, the later one in the file is reported.
  std::stable_sort(
      by_offset.begin(), by_offset.end(),
      [](const GgufTensorInfo* a, const GgufTensorInfo* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const GgufTensorInfo& prev = *by_offset[i - 1];
    if (prev.offset + prev.n_bytes > by_offset[i]->offset) {  // both in range: no overflow
      in_.fail(by_offset[i]->name, "overlaps the bytes of tensor " + prev.name);
    }
  }
}

GgufFile GgufParser::parse() {
  GgufFile f;
  f.name = in_.file();
  f.metadata = GgufMetadata(in_.file());
  char magic[4];
  std::memcpy(magic, in_.read_bytes(4, "magic"), 4);
  if (std::memcmp(magic, kGgufMagic, 4) != 0)
    in_.fail("magic", "the file does not start with \"GGUF\"");
  f.version = in_.read<uint32_t>("version");
  if (f.version == 1) {
    in_.fail("version",
             "GGUF v1 (32-bit counts) is not supported; re-convert with a current llama.cpp");
  }
  if (f.version != 2 && f.version != 3) {
    const bool swapped = f.version == 0x02000000u || f.version == 0x03000000u;
    in_.fail("version", std::to_string(f.version) +
                            (swapped ? " looks byte-swapped: big-endian GGUF is not supported"
                                     : " is not a supported GGUF version (2 or 3)"));
  }
  const uint64_t tensor_count = in_.read<uint64_t>("tensor_count");
  const uint64_t kv_count = in_.read<uint64_t>("metadata_kv_count");
  check_counts(kv_count, kMinKvBytes, "metadata_kv_count");
  for (uint64_t i = 0; i < kv_count; ++i) {
    std::string key = read_string("metadata[" + std::to_string(i) + "].key");
    const GgufType type = read_type(key);
    GgufValue value = read_value(type, key, 0);
    f.metadata.insert(std::move(key), std::move(value));
  }
  check_counts(tensor_count, kMinTensorInfoBytes, "tensor_count");
  f.tensors.reserve(tensor_count);
  std::set<std::string> names;
  for (uint64_t i = 0; i < tensor_count; ++i) {
    f.tensors.push_back(read_tensor_info(i));
    if (!names.insert(f.tensors.back().name).second)
      in_.fail(f.tensors.back().name, "appears twice");
  }
  if (const GgufValue* a = f.metadata.find("general.alignment")) {
    const uint32_t* align = std::get_if<uint32_t>(&a->data);
    if (align == nullptr)
      in_.fail("general.alignment", "is a " + to_string(a->type()) + ", expected uint32");
    if (*align == 0 || (*align & (*align - 1)) != 0) {
      in_.fail("general.alignment", std::to_string(*align) + " is not a power of two");
    }
    f.alignment = *align;
  }
  f.data_offset = checked_align_up(in_.offset(), f.alignment, in_.file(), "data section");
  check_tensor_ranges(f);
  f.bytes = in_.bytes_at(0, 0, "data");
  return f;
}

}  // namespace

const GgufTensorInfo* GgufFile::find_tensor(const std::string& tensor_name) const {
  for (const GgufTensorInfo& t : tensors) {
    if (t.name == tensor_name) return &t;
  }
  return nullptr;
}

GgufFile parse_gguf(const uint8_t* data, size_t size, const std::string& name) {
  return GgufParser(data, size, name).parse();
}

}  // namespace nanoserve
