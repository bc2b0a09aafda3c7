#include "common/quant/quant_io.h"

#include <cstring>
#include <map>

#include "common/error.h"
#include "common/io/output_file.h"
#include "common/loaders/byte_reader.h"
#include "common/loaders/mapped_file.h"
#include "common/loaders/tensor_decode.h"
#include "common/quant/packing.h"

namespace nanoserve::quant {

namespace {

enum Dtype : uint32_t { kF32 = 0, kU8 = 1, kF16 = 2, kI32 = 3, kDtypeCount = 4 };
constexpr const char* kDtypeNames[kDtypeCount] = {"F32", "U8", "F16", "I32"};
constexpr uint32_t kMaxNameBytes = 4096;     // model name
constexpr uint32_t kMaxTensorNameBytes = 256;
constexpr uint64_t kMinEntryBytes = 2 + 4 + 8 + 8;  // empty name

/// One tensor the format expects, with its exact size.
struct TensorSpec {
  std::string name;
  uint32_t dtype;
  uint64_t bytes;
  bool optional;  // g_idx
};

std::string layer_prefix(int l) { return "layers." + std::to_string(l) + "."; }

/// Every tensor of a model with config `c` and scheme `s`, in file order.
std::vector<TensorSpec> expected_tensors(const ModelConfig& c, const QuantScheme& s) {
  const uint64_t d = uint64_t(c.dim), v = uint64_t(c.vocab_size);
  std::vector<TensorSpec> t = {{"token_embedding", kF32, 4 * v * d, false}};
  if (!c.tied_classifier) t.push_back({"classifier", kF32, 4 * v * d, false});
  t.push_back({"final_norm", kF32, 4 * d, false});
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = layer_prefix(l);
    t.push_back({p + "attn_norm", kF32, 4 * d, false});
    t.push_back({p + "ffn_norm", kF32, 4 * d, false});
    for (LinearId id : kLinearIds) {
      const int rows = linear_rows(c, id), cols = linear_cols(c, id);
      const uint64_t params = uint64_t(rows) * uint64_t(s.groups(cols));
      const std::string n = p + to_string(id);
      t.push_back({n + ".qweight", kU8, uint64_t(rows) * uint64_t(packed_row_bytes(cols, s.bits)), false});
      t.push_back({n + ".scales", kF16, 2 * params, false});
      if (!s.symmetric) t.push_back({n + ".zeros", kF16, 2 * params, false});
      t.push_back({n + ".g_idx", kI32, 4 * uint64_t(cols), true});
    }
  }
  return t;
}

// ---------------------------------------------------------------------------------- writing

class Writer {
 public:
  template <typename T>
  void put(T value) {
    const size_t at = bytes.size();
    bytes.resize(at + sizeof(T));
    std::memcpy(bytes.data() + at, &value, sizeof(T));
  }
  void put_bytes(const void* data, size_t n) {
    const auto* p = static_cast<const uint8_t*>(data);
    bytes.insert(bytes.end(), p, p + n);
  }
  std::vector<uint8_t> bytes;
};

/// The bytes of tensor `name` of `m` (which has passed validation).
std::vector<uint8_t> tensor_bytes(const QuantizedModel& m, const std::string& name) {
  auto raw = [](const auto& vec) {
    std::vector<uint8_t> out(vec.size() * sizeof(vec[0]));
    if (!vec.empty()) std::memcpy(out.data(), vec.data(), out.size());
    return out;
  };
  const Model& b = m.base;
  if (name == "token_embedding") return raw(b.token_embedding);
  if (name == "classifier") return raw(b.classifier);
  if (name == "final_norm") return raw(b.final_norm);
  const size_t dot = name.find('.', 7);  // after "layers."
  const int l = std::stoi(name.substr(7, dot - 7));
  const std::string rest = name.substr(dot + 1);
  if (rest == "attn_norm") return raw(b.layers[size_t(l)].attn_norm);
  if (rest == "ffn_norm") return raw(b.layers[size_t(l)].ffn_norm);
  for (LinearId id : kLinearIds) {
    const std::string n = to_string(id);
    const QuantizedLinear& q = m.layers[size_t(l)][id];
    if (rest == n + ".qweight") return q.qweight;
    if (rest == n + ".scales") return raw(q.scales);
    if (rest == n + ".zeros") return raw(q.zeros);
    if (rest == n + ".g_idx") return raw(q.g_idx);
  }
  throw InvalidArgument("serialize_quantized_model: no tensor " + name);
}

}  // namespace

std::vector<uint8_t> serialize_quantized_model(const QuantizedModel& model) {
  try {
    model.validate(model.base.source.empty() ? "(quantized model)" : model.base.source);
  } catch (const LoadError& e) {
    throw InvalidArgument(std::string("serialize_quantized_model: ") + e.what());
  }
  const ModelConfig& c = model.base.config;
  if (c.attention_bias || c.rope_scaling.type != RopeScalingType::kNone ||
      !c.rope_scaling.freq_factors.empty()) {
    throw InvalidArgument("serialize_quantized_model: " + model.base.source +
                          " has q/k/v biases or rope_scaling, which the .nsqm format (version " +
                          std::to_string(kNsqmVersion) + ") does not store");
  }
  std::vector<std::pair<TensorSpec, std::vector<uint8_t>>> tensors;
  for (const TensorSpec& spec : expected_tensors(c, model.scheme)) {
    std::vector<uint8_t> bytes = tensor_bytes(model, spec.name);
    if (spec.optional && bytes.empty()) continue;
    tensors.emplace_back(spec, std::move(bytes));
  }
  Writer w;
  w.put_bytes(kNsqmMagic, 4);
  w.put<uint32_t>(kNsqmVersion);
  for (int32_t v : {c.dim, c.hidden_dim, c.n_layers, c.n_heads, c.n_kv_heads, c.head_dim,
                    c.vocab_size, c.max_seq_len}) {
    w.put<int32_t>(v);
  }
  w.put<float>(c.rope_theta);
  w.put<uint32_t>(c.rope_style == RopeStyle::kRotateHalf ? 1 : 0);
  w.put<float>(c.norm_eps);
  w.put<uint32_t>(c.tied_classifier ? 1 : 0);
  w.put<uint32_t>(uint32_t(model.scheme.bits));
  w.put<uint32_t>(uint32_t(model.scheme.group_size));
  w.put<uint32_t>(model.scheme.symmetric ? 1 : 0);
  w.put<uint32_t>(uint32_t(model.method));
  w.put<uint32_t>(uint32_t(tensors.size()));
  const std::string name = c.name.substr(0, kMaxNameBytes);
  w.put<uint32_t>(uint32_t(name.size()));
  w.put_bytes(name.data(), name.size());
  uint64_t offset = 0;
  for (const auto& [spec, bytes] : tensors) {
    w.put<uint16_t>(uint16_t(spec.name.size()));
    w.put_bytes(spec.name.data(), spec.name.size());
    w.put<uint32_t>(spec.dtype);
    w.put<uint64_t>(offset);
    w.put<uint64_t>(bytes.size());
    offset += bytes.size();
  }
  for (const auto& entry : tensors) w.put_bytes(entry.second.data(), entry.second.size());
  return std::move(w.bytes);
}

void save_quantized_model(const QuantizedModel& model, const std::string& path) {
  const std::vector<uint8_t> bytes = serialize_quantized_model(model);
  write_output_file(path, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

// ---------------------------------------------------------------------------------- reading

namespace {

struct TableEntry {
  uint32_t dtype;
  uint64_t offset;
  uint64_t bytes;
  bool used = false;
};

ModelConfig read_config(ByteReader& in) {
  ModelConfig c;
  c.name = in.file();
  c.dim = in.read<int32_t>("header.dim");
  c.hidden_dim = in.read<int32_t>("header.hidden_dim");
  c.n_layers = in.read<int32_t>("header.n_layers");
  c.n_heads = in.read<int32_t>("header.n_heads");
  c.n_kv_heads = in.read<int32_t>("header.n_kv_heads");
  c.head_dim = in.read<int32_t>("header.head_dim");
  c.vocab_size = in.read<int32_t>("header.vocab_size");
  c.max_seq_len = in.read<int32_t>("header.max_seq_len");
  c.rope_theta = in.read<float>("header.rope_theta");
  const uint32_t rope = in.read<uint32_t>("header.rope_style");
  if (rope > 1) in.fail("header.rope_style", std::to_string(rope) + " is not 0 or 1");
  c.rope_style = rope == 1 ? RopeStyle::kRotateHalf : RopeStyle::kAdjacentPairs;
  c.norm_eps = in.read<float>("header.norm_eps");
  const uint32_t tied = in.read<uint32_t>("header.tied_classifier");
  if (tied > 1) in.fail("header.tied_classifier", std::to_string(tied) + " is not 0 or 1");
  c.tied_classifier = tied == 1;
  c.validate(in.file());
  return c;
}

QuantScheme read_scheme(ByteReader& in, QuantMethod& method) {
  QuantScheme s;
  const uint32_t bits = in.read<uint32_t>("header.bits");
  if (bits != 4 && bits != 8) in.fail("header.bits", std::to_string(bits) + " is not 4 or 8");
  const uint32_t group = in.read<uint32_t>("header.group_size");
  if (group > (1u << 24)) in.fail("header.group_size", std::to_string(group) + " exceeds 2^24");
  const uint32_t sym = in.read<uint32_t>("header.symmetric");
  if (sym > 1) in.fail("header.symmetric", std::to_string(sym) + " is not 0 or 1");
  const uint32_t m = in.read<uint32_t>("header.method");
  if (m > 2) in.fail("header.method", std::to_string(m) + " is not 0 (rtn), 1 (gptq) or 2 (awq)");
  s.bits = int(bits);
  s.group_size = int(group);
  s.symmetric = sym == 1;
  method = QuantMethod(m);
  return s;
}

template <typename T>
std::vector<T> copy_as(const uint8_t* p, uint64_t bytes) {
  std::vector<T> out(size_t(bytes / sizeof(T)));
  if (bytes > 0) std::memcpy(out.data(), p, size_t(bytes));
  return out;
}

}  // namespace

QuantizedModel load_quantized_model_from_memory(const uint8_t* data, size_t size,
                                                const std::string& name) {
  ByteReader in(data, size, name);
  if (size < kNsqmHeaderBytes) {
    in.fail("header", "the file has " + std::to_string(size) + " bytes, fewer than the " +
                          std::to_string(kNsqmHeaderBytes) + "-byte NSQM header");
  }
  if (std::memcmp(data, kNsqmMagic, 4) != 0) in.fail("magic", "is not \"NSQM\"");
  in.skip(4, "magic");
  const uint32_t version = in.read<uint32_t>("header.version");
  if (version != kNsqmVersion) {
    in.fail("header.version", std::to_string(version) + " is not supported (only " +
                                  std::to_string(kNsqmVersion) + ")");
  }
  QuantizedModel m;
  m.base.config = read_config(in);
  m.base.source = name;
  m.scheme = read_scheme(in, m.method);
  const ModelConfig& c = m.base.config;
  const std::vector<TensorSpec> specs = expected_tensors(c, m.scheme);

  const uint32_t count = in.read<uint32_t>("header.tensor_count");
  const uint32_t name_bytes = in.read<uint32_t>("header.name_bytes");
  if (count > specs.size()) {
    in.fail("header.tensor_count", std::to_string(count) + " exceeds the " +
                                       std::to_string(specs.size()) + " tensors this model can have");
  }
  if (name_bytes > kMaxNameBytes) {
    in.fail("header.name_bytes", std::to_string(name_bytes) + " exceeds " + std::to_string(kMaxNameBytes));
  }
  m.base.config.name = in.read_string(name_bytes, "name");
  if (uint64_t(count) * kMinEntryBytes > in.remaining()) {
    in.fail("header.tensor_count", std::to_string(count) + " table entries cannot fit in the " +
                                       std::to_string(in.remaining()) + " bytes left");
  }
  std::map<std::string, TableEntry> table;
  std::vector<std::string> order;
  for (uint32_t i = 0; i < count; ++i) {
    const std::string field = "tensor_table[" + std::to_string(i) + "]";
    const uint16_t len = in.read<uint16_t>(field + ".name_len");
    if (len == 0 || len > kMaxTensorNameBytes) {
      in.fail(field + ".name_len", std::to_string(len) + " is outside [1, " +
                                       std::to_string(kMaxTensorNameBytes) + "]");
    }
    const std::string tensor = in.read_string(len, field + ".name");
    TableEntry e;
    e.dtype = in.read<uint32_t>(tensor + ".dtype");
    e.offset = in.read<uint64_t>(tensor + ".offset");
    e.bytes = in.read<uint64_t>(tensor + ".n_bytes");
    if (e.dtype >= kDtypeCount) in.fail(tensor + ".dtype", std::to_string(e.dtype) + " is not 0..3");
    if (!table.emplace(tensor, e).second) in.fail(tensor, "appears twice in the tensor table");
    order.push_back(tensor);
  }
  // Tensors lie back to back in table order and the file ends with the last one: no gaps, no
  // overlaps, no trailing bytes.
  const uint64_t data_start = in.offset();
  uint64_t expected_offset = 0;
  for (const std::string& tensor : order) {
    const TableEntry& e = table.at(tensor);
    if (e.offset != expected_offset) {
      in.fail(tensor + ".offset", std::to_string(e.offset) + ", expected " + std::to_string(expected_offset) +
                                      " (tensors are stored back to back in table order)");
    }
    const uint64_t end = checked_add(checked_add(data_start, e.offset, name, tensor), e.bytes, name, tensor);
    if (end > size) {
      in.fail(tensor, "bytes [" + std::to_string(data_start + e.offset) + ", " + std::to_string(end) +
                          ") lie outside the file of " + std::to_string(size) + " bytes");
    }
    expected_offset += e.bytes;
  }
  if (data_start + expected_offset != size) {
    in.fail("file size", std::to_string(size) + " bytes, but the tensor table ends the data at " +
                             std::to_string(data_start + expected_offset));
  }
  // Every expected tensor present with its exact dtype and size; nothing else.
  for (const TensorSpec& spec : specs) {
    auto it = table.find(spec.name);
    if (it == table.end()) {
      if (!spec.optional) in.fail(spec.name, "tensor is missing");
      continue;
    }
    TableEntry& e = it->second;
    if (e.dtype != spec.dtype) {
      in.fail(spec.name + ".dtype", std::string(kDtypeNames[e.dtype]) + ", expected " + kDtypeNames[spec.dtype]);
    }
    if (e.bytes != spec.bytes) {
      in.fail(spec.name + ".n_bytes", std::to_string(e.bytes) + ", expected " + std::to_string(spec.bytes) +
                                          " for the header's shape and scheme");
    }
    e.used = true;
  }
  for (const auto& [tensor, e] : table) {
    if (!e.used) in.fail(tensor, "is not a tensor of an NSQM model");
  }

  // Sizes are checked: copy the values (allocation bounded by the file size).
  auto bytes_of = [&](const std::string& tensor) { return data + data_start + table.at(tensor).offset; };
  auto f32 = [&](const std::string& tensor) {
    return decode_tensor(decode_f32, bytes_of(tensor), table.at(tensor).bytes / 4, name, tensor);
  };
  m.base.token_embedding = f32("token_embedding");
  if (!c.tied_classifier) m.base.classifier = f32("classifier");
  m.base.final_norm = f32("final_norm");
  m.base.layers.resize(size_t(c.n_layers));
  m.layers.resize(size_t(c.n_layers));
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = layer_prefix(l);
    m.base.layers[size_t(l)].attn_norm = f32(p + "attn_norm");
    m.base.layers[size_t(l)].ffn_norm = f32(p + "ffn_norm");
    for (LinearId id : kLinearIds) {
      const std::string n = p + to_string(id);
      QuantizedLinear& q = m.layers[size_t(l)][id];
      q.rows = linear_rows(c, id);
      q.cols = linear_cols(c, id);
      q.scheme = m.scheme;
      q.qweight = copy_as<uint8_t>(bytes_of(n + ".qweight"), table.at(n + ".qweight").bytes);
      q.scales = copy_as<uint16_t>(bytes_of(n + ".scales"), table.at(n + ".scales").bytes);
      if (!m.scheme.symmetric) q.zeros = copy_as<uint16_t>(bytes_of(n + ".zeros"), table.at(n + ".zeros").bytes);
      if (table.count(n + ".g_idx")) q.g_idx = copy_as<int32_t>(bytes_of(n + ".g_idx"), table.at(n + ".g_idx").bytes);
    }
  }
  m.validate(name);
  return m;
}

QuantizedModel load_quantized_model(const std::string& path) {
  const MappedFile file(path, "quantized model");
  return load_quantized_model_from_memory(file.data(), file.size(), path);
}

}  // namespace nanoserve::quant
