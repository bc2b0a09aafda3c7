// The NSQM quantized-model file (common/quant/quant_io.h): exact round trips, and every kind
// of corruption rejected with a LoadError naming the file and the field — before allocating.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <filesystem>
#include <map>

#include "common/error.h"
#include "common/quant/quant_io.h"
#include "common/quant/quantize_model.h"
#include "quant_test_support.h"
#include "test_support.h"

namespace nanoserve::quant {
namespace {

/// A small GQA model quantized with GPTQ act-order, asymmetric INT4 g32: every optional part
/// of the format (zeros, g_idx) is present.
const QuantizedModel& act_order_model() {
  static const QuantizedModel q = [] {
    const Model m = testing::small_model(2);
    QuantizeOptions o;
    o.method = QuantMethod::kGptq;
    o.scheme = {4, 32, false};
    o.gptq.act_order = true;
    return quantize_model(m, testing::random_sequences(3, 3, 32, m.config.vocab_size), o);
  }();
  return q;
}

/// Where each tensor's table entry and data are, found by walking the format as documented.
struct EntryPos {
  size_t entry;     // first byte of the entry's dtype field
  size_t data;      // first byte of the tensor's data
  uint64_t n_bytes;
};
std::map<std::string, EntryPos> walk_table(const std::vector<uint8_t>& b) {
  uint32_t count, name_bytes;
  std::memcpy(&count, &b[72], 4);
  std::memcpy(&name_bytes, &b[76], 4);
  size_t at = kNsqmHeaderBytes + name_bytes;
  std::vector<std::pair<std::string, EntryPos>> entries;
  for (uint32_t i = 0; i < count; ++i) {
    uint16_t len;
    std::memcpy(&len, &b[at], 2);
    const std::string name(reinterpret_cast<const char*>(&b[at + 2]), len);
    EntryPos p{at + 2 + len, 0, 0};
    uint64_t offset;
    std::memcpy(&offset, &b[p.entry + 4], 8);
    std::memcpy(&p.n_bytes, &b[p.entry + 12], 8);
    p.data = size_t(offset);
    entries.emplace_back(name, p);
    at = p.entry + 20;
  }
  std::map<std::string, EntryPos> out;
  for (auto& [name, p] : entries) {
    p.data += at;  // the data section starts after the table
    out[name] = p;
  }
  return out;
}

template <typename T>
void patch(std::vector<uint8_t>& b, size_t at, T value) {
  std::memcpy(&b[at], &value, sizeof(T));
}

void expect_load_error(const std::vector<uint8_t>& bytes, const std::string& field,
                       const std::string& detail) {
  try {
    load_quantized_model_from_memory(bytes.data(), bytes.size(), "bad.nsqm");
    ADD_FAILURE() << "no error; expected " << field << ": " << detail;
  } catch (const LoadError& e) {
    EXPECT_EQ(e.file(), "bad.nsqm");
    EXPECT_NE(e.field().find(field), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(detail), std::string::npos) << e.what();
  }
}

TEST(QuantIo, RoundTripKeepsEveryByteAndEveryWeight) {
  const QuantizedModel& q = act_order_model();
  ASSERT_FALSE(q.layers[0][LinearId::kW2].g_idx.empty());
  ASSERT_FALSE(q.layers[0][LinearId::kW2].zeros.empty());
  const std::vector<uint8_t> bytes = serialize_quantized_model(q);
  const std::string path = testing::write_temp_file("q.nsqm", bytes);
  const QuantizedModel back = load_quantized_model(path);
  EXPECT_EQ(serialize_quantized_model(back), bytes);
  EXPECT_EQ(back.method, QuantMethod::kGptq);
  EXPECT_EQ(back.scheme.label(), "int4-g32-asym");
  EXPECT_EQ(back.base.config.name, "small");
  const Model a = q.dequantize(), b = back.dequantize();
  for (int l = 0; l < 2; ++l) {
    for (LinearId id : kLinearIds) {
      EXPECT_EQ(linear_weights(a.layers[size_t(l)], id), linear_weights(b.layers[size_t(l)], id));
    }
  }
  EXPECT_EQ(a.token_embedding, b.token_embedding);
  EXPECT_EQ(back.weight_bytes(), q.weight_bytes());
}

TEST(QuantIo, SavedFileSizeIsHeaderTableAndWeightBytes) {
  const QuantizedModel& q = act_order_model();
  const std::vector<uint8_t> bytes = serialize_quantized_model(q);
  const auto table = walk_table(bytes);
  uint64_t data = 0;
  for (const auto& entry : table) data += entry.second.n_bytes;
  EXPECT_EQ(int64_t(data), q.weight_bytes());
  EXPECT_EQ(table.at("layers.1.w2.qweight").n_bytes, 64u * 48);  // (dim, hidden/2)
  EXPECT_EQ(table.at("layers.1.w2.scales").n_bytes, 64u * 3 * 2);  // 96 / 32 groups
}

TEST(QuantIo, RejectsBadHeaders) {
  const std::vector<uint8_t> good = serialize_quantized_model(act_order_model());
  std::vector<uint8_t> b(good.begin(), good.begin() + 40);
  expect_load_error(b, "header", "fewer than the 80-byte NSQM header");
  b = good;
  b[0] = 'X';
  expect_load_error(b, "magic", "is not \"NSQM\"");
  b = good;
  patch<uint32_t>(b, 4, 2);
  expect_load_error(b, "header.version", "2 is not supported");
  b = good;
  patch<uint32_t>(b, 56, 5);
  expect_load_error(b, "header.bits", "5 is not 4 or 8");
  b = good;
  patch<int32_t>(b, 16, 0);
  expect_load_error(b, "n_layers", "0");
  b = good;
  patch<uint32_t>(b, 72, 1000000000u);
  expect_load_error(b, "header.tensor_count", "exceeds");
  b = good;
  patch<uint32_t>(b, 76, 1u << 30);
  expect_load_error(b, "header.name_bytes", "exceeds 4096");
}

TEST(QuantIo, RejectsTensorRangesOutsideTheFileBeforeAllocating) {
  const std::vector<uint8_t> good = serialize_quantized_model(act_order_model());
  const auto table = walk_table(good);
  std::vector<uint8_t> b = good;
  b.pop_back();  // the last tensor now runs past the end
  expect_load_error(b, "", "outside the file");
  b = good;
  b.push_back(0);
  expect_load_error(b, "file size", "the tensor table ends the data at");
  b = good;  // a huge size: rejected by the range check, never allocated
  patch<uint64_t>(b, table.at("token_embedding").entry + 12, uint64_t(1) << 62);
  expect_load_error(b, "token_embedding", "lie outside the file");
  b = good;  // a size one larger: the next tensor's offset no longer follows
  patch<uint64_t>(b, table.at("token_embedding").entry + 12, table.at("token_embedding").n_bytes + 1);
  expect_load_error(b, "offset", "back to back");
  b = good;
  patch<uint64_t>(b, table.at("final_norm").entry + 4, 12345);
  expect_load_error(b, "final_norm.offset", "12345, expected");
}

TEST(QuantIo, RejectsTensorsOfTheWrongTypeSizeOrName) {
  const std::vector<uint8_t> good = serialize_quantized_model(act_order_model());
  const auto table = walk_table(good);
  std::vector<uint8_t> b = good;
  patch<uint32_t>(b, table.at("layers.0.wq.scales").entry, 0);
  expect_load_error(b, "layers.0.wq.scales.dtype", "F32, expected F16");
  b = good;
  patch<uint32_t>(b, table.at("layers.0.wq.scales").entry, 9);
  expect_load_error(b, "layers.0.wq.scales.dtype", "is not 0..3");
  b = good;  // rename "layers.0.wk.zeros" to "layers.0.wk.zeroz"
  b[table.at("layers.0.wk.zeros").entry - 1] = 'z';
  expect_load_error(b, "layers.0.wk.zeros", "tensor is missing");
  b = good;  // header says symmetric: the table then holds more tensors than such a model has
  patch<uint32_t>(b, 64, 1);
  expect_load_error(b, "header.tensor_count", "exceeds the 49 tensors this model can have");
  b = good;  // a g_idx renamed to a name outside the format
  b[table.at("layers.1.w1.g_idx").entry - 1] = 'y';
  expect_load_error(b, "layers.1.w1.g_idy", "is not a tensor of an NSQM model");
}

TEST(QuantIo, RejectsBadValues) {
  const std::vector<uint8_t> good = serialize_quantized_model(act_order_model());
  const auto table = walk_table(good);
  std::vector<uint8_t> b = good;
  patch<uint16_t>(b, table.at("layers.0.wq.scales").data + 2 * 3, 0x7E00);  // NaN
  expect_load_error(b, "layers.0.wq.scales", "entry 3 is nan");
  b = good;
  patch<uint16_t>(b, table.at("layers.1.wo.zeros").data, 0x4C40);  // 17.0 > 15
  expect_load_error(b, "layers.1.wo.zeros", "not an integer in [0, 15]");
  b = good;
  patch<int32_t>(b, table.at("layers.0.w2.g_idx").data + 4 * 7, 3);  // 96 columns: 3 groups
  expect_load_error(b, "layers.0.w2.g_idx", "column 7 has group 3");
  b = good;
  patch<float>(b, table.at("token_embedding").data, std::numeric_limits<float>::infinity());
  expect_load_error(b, "token_embedding", "infinite");
}

TEST(QuantIo, FuzzSeedsLoad) {
  namespace fs = std::filesystem;
  int n = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("fuzz/seeds/quantized_model", ec)) {
    EXPECT_NO_THROW(load_quantized_model(entry.path().string())) << entry.path();
    ++n;
  }
  EXPECT_GT(n, 0) << "no seeds in fuzz/seeds/quantized_model (cwd " << fs::current_path() << ")";
}

}  // namespace
}  // namespace nanoserve::quant
