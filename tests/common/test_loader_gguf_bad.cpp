// GGUF bad input: every corruption is a LoadError naming the file and the field, found
// before anything large is allocated.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>

#include "common/error.h"
#include "common/loaders/ggml_types.h"
#include "common/loaders/gguf_file.h"
#include "common/loaders/gguf_loader.h"
#include "common/loaders/gguf_vocabulary.h"
#include "common/loaders/gguf_writer.h"
#include "loader_test_files.h"
#include "test_support.h"

namespace nanoserve {
namespace {

using testing::expect_load_error;
using testing::find_bytes;
using testing::find_gguf_string;
using testing::patch;
using testing::peek;

const std::string kFile = "bad.gguf";

GgufVocabulary micro_vocab() {
  GgufVocabulary v;
  v.model = "llama";
  for (int i = 0; i < 10; ++i) v.tokens.push_back("t" + std::to_string(i));
  v.scores.assign(10, 0.0f);
  v.token_types.assign(10, GgufTokenType::kNormal);
  v.bos_id = 1;
  v.eos_id = 2;
  return v;
}

std::vector<uint8_t> good_file() {
  const GgufVocabulary v = micro_vocab();
  return save_gguf(testing::micro_model(false), kGgmlTypeF32, &v);
}

Model load(const std::vector<uint8_t>& bytes) {
  return load_gguf_from_memory(bytes.data(), bytes.size(), kFile);
}

/// Offset of the uint32 n_dims field of tensor `name` (right after its name bytes).
size_t tensor_info(const std::vector<uint8_t>& bytes, const std::string& name) {
  const size_t at = testing::find_gguf_string(bytes, name);
  EXPECT_NE(at, std::string::npos) << name;
  return at + name.size();
}

/// A file with the micro model's tensors and llama metadata, plus or minus some keys.
std::vector<uint8_t> file_with(const std::vector<std::pair<std::string, GgufValue>>& extra,
                               const std::string& drop_key = "") {
  // Re-read the good file's metadata and rebuild, so tests can add or drop single keys.
  const std::vector<uint8_t> good = good_file();
  const GgufFile f = parse_gguf(good.data(), good.size(), "good");
  GgufWriter w;
  for (const auto& [key, value] : f.metadata.entries()) {
    if (key != drop_key) w.add_metadata(key, value);
  }
  for (const auto& [key, value] : extra) w.add_metadata(key, value);
  for (const GgufTensorInfo& t : f.tensors) {
    const uint8_t* p = f.tensor_data(t);
    w.add_tensor(t.name, t.dims, t.type->id, std::vector<uint8_t>(p, p + t.n_bytes));
  }
  return w.serialize();
}

TEST(GgufLoaderBadInput, GoodFileLoads) { EXPECT_NO_THROW(load(good_file())); }

TEST(GgufLoaderBadInput, RejectsWrongMagic) {
  std::vector<uint8_t> bytes = good_file();
  bytes[3] = 'G';
  expect_load_error([&] { load(bytes); }, kFile, "magic", "does not start with \"GGUF\"");
}

TEST(GgufLoaderBadInput, RejectsVersionOneAndUnknownVersions) {
  std::vector<uint8_t> bytes = good_file();
  patch<uint32_t>(bytes, 4, 1);
  expect_load_error([&] { load(bytes); }, kFile, "version", "v1");
  patch<uint32_t>(bytes, 4, 4);
  expect_load_error([&] { load(bytes); }, kFile, "version", "4 is not a supported GGUF version");
  patch<uint32_t>(bytes, 4, 0x03000000u);
  expect_load_error([&] { load(bytes); }, kFile, "version", "big-endian");
  patch<uint32_t>(bytes, 4, 2);  // v2 shares v3's layout
  EXPECT_NO_THROW(load(bytes));
}

TEST(GgufLoaderBadInput, TruncatedFilesAreRejectedAtEveryCut) {
  const std::vector<uint8_t> full = good_file();
  const size_t infos = find_bytes(full, "token_embd.weight");
  // Cuts inside: magic, version, counts, a key, a string array, tensor infos, data.
  for (size_t cut : {size_t(0), size_t(2), size_t(6), size_t(20), size_t(40), size_t(300), infos,
                     infos + 20, full.size() / 2, full.size() - 1}) {
    SCOPED_TRACE("cut at " + std::to_string(cut));
    const std::vector<uint8_t> bytes(full.begin(), full.begin() + cut);
    try {
      load(bytes);
      ADD_FAILURE() << "loaded a truncated file";
    } catch (const LoadError& e) {
      EXPECT_EQ(e.file(), kFile);
      EXPECT_FALSE(e.field().empty());
    }
  }
}

TEST(GgufLoaderBadInput, TruncatedRealFileNamesTheTensorThatLeavesTheFile) {
  NANOSERVE_REQUIRE_DATA(path, "stories260K.gguf");
  std::vector<uint8_t> bytes = testing::read_bytes(path);
  bytes.resize(bytes.size() - 1);  // the last tensor, blk.4.ffn_norm.weight, loses a byte
  const std::string cut = testing::write_temp_file("stories260K_cut.gguf", bytes);
  expect_load_error([&] { load_gguf(cut); }, cut, "blk.4.ffn_norm.weight",
                    "needs 256 bytes at offset 1185120, but the file has 1185375 bytes");
}

TEST(GgufLoaderBadInput, AbsurdCountsFailFastWithoutAllocating) {
  std::vector<uint8_t> bytes = good_file();
  const auto start = std::chrono::steady_clock::now();
  patch<uint64_t>(bytes, 16, uint64_t(1) << 60);  // metadata_kv_count
  expect_load_error([&] { load(bytes); }, kFile, "metadata_kv_count", "cannot fit");
  bytes = good_file();
  patch<uint64_t>(bytes, 8, ~uint64_t(0));  // tensor_count
  expect_load_error([&] { load(bytes); }, kFile, "tensor_count", "cannot fit");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(100));
}

TEST(GgufLoaderBadInput, StringLengthPastTheEndIsRejected) {
  std::vector<uint8_t> bytes = good_file();
  patch<uint64_t>(bytes, 24, uint64_t(1) << 62);  // length of the first key
  expect_load_error([&] { load(bytes); }, kFile, "metadata[0].key",
                    "needs 4611686018427387904 bytes");
}

TEST(GgufLoaderBadInput, ArrayCountPastTheEndIsRejected) {
  std::vector<uint8_t> bytes = good_file();
  const size_t key = find_gguf_string(bytes, "tokenizer.ggml.tokens");
  // key bytes, uint32 type (array), uint32 element type, uint64 count
  patch<uint64_t>(bytes, key + 21 + 8, uint64_t(1) << 40);
  expect_load_error([&] { load(bytes); }, kFile, "tokenizer.ggml.tokens", "cannot fit");
}

TEST(GgufLoaderBadInput, UnknownValueTypeIsRejected) {
  std::vector<uint8_t> bytes = good_file();
  const size_t key = find_gguf_string(bytes, "llama.block_count");
  patch<uint32_t>(bytes, key + 17, 13);
  expect_load_error([&] { load(bytes); }, kFile, "llama.block_count", "unknown GGUF value type 13");
}

TEST(GgufLoaderBadInput, DeeplyNestedArraysAreRejected) {
  GgufValue v{uint8_t(1)};
  for (int depth = 0; depth < 12; ++depth) {
    GgufArray a;
    a.element_type = v.type();
    a.items.push_back(v);
    v = GgufValue{a};
  }
  const std::vector<uint8_t> bytes = file_with({{"deep", v}});
  expect_load_error([&] { load(bytes); }, kFile, "deep", "nested deeper than 8");
}

TEST(GgufLoaderBadInput, DuplicateKeyIsRejected) {
  const std::vector<uint8_t> bytes = file_with({{"llama.block_count", gguf_uint32(2)}});
  expect_load_error([&] { load(bytes); }, kFile, "llama.block_count", "appears twice");
}

TEST(GgufLoaderBadInput, BadAlignmentIsRejected) {
  expect_load_error(
      [&] {
        load(file_with({{"general.alignment", gguf_uint32(24)}}));
      },
      kFile, "general.alignment", "not a power of two");
  expect_load_error(
      [&] {
        load(file_with({{"general.alignment", gguf_string("32")}}));
      },
      kFile, "general.alignment", "expected uint32");
}

TEST(GgufLoaderBadInput, TensorRangeOutsideTheFileIsRejected) {
  std::vector<uint8_t> bytes = good_file();
  const size_t info = tensor_info(bytes, "blk.1.attn_v.weight");  // n_dims = 2
  patch<uint64_t>(bytes, info + 4 + 16 + 4, uint64_t(1) << 20);   // offset
  expect_load_error([&] { load(bytes); }, kFile, "blk.1.attn_v.weight", "needs 128 bytes");
  patch<uint64_t>(bytes, info + 4 + 16 + 4, ~uint64_t(0) - 31);  // offset + data_offset wraps
  expect_load_error([&] { load(bytes); }, kFile, "blk.1.attn_v.weight");
}

TEST(GgufLoaderBadInput, MisalignedAndOverlappingTensorsAreRejected) {
  std::vector<uint8_t> bytes = good_file();
  const size_t info = tensor_info(bytes, "blk.0.attn_q.weight");
  const uint64_t offset = peek<uint64_t>(bytes, info + 4 + 16 + 4);
  patch<uint64_t>(bytes, info + 4 + 16 + 4, offset + 4);
  expect_load_error([&] { load(bytes); }, kFile, "blk.0.attn_q.weight",
                    "not a multiple of the alignment 32");
  patch<uint64_t>(bytes, info + 4 + 16 + 4, 0);  // on top of token_embd.weight
  const std::string msg =
      expect_load_error([&] { load(bytes); }, kFile, "blk.0.attn_q.weight", "overlaps");
}

TEST(GgufLoaderBadInput, AbsurdTensorDimensionsAreRejectedBeforeAllocating) {
  std::vector<uint8_t> bytes = good_file();
  const size_t info = tensor_info(bytes, "token_embd.weight");
  patch<uint64_t>(bytes, info + 4, uint64_t(1) << 40);
  patch<uint64_t>(bytes, info + 12, uint64_t(1) << 40);
  expect_load_error([&] { load(bytes); }, kFile, "token_embd.weight", "overflows 64 bits");
  patch<uint64_t>(bytes, info + 4, uint64_t(1) << 30);
  patch<uint64_t>(bytes, info + 12, 1);  // 4 GiB: inside 64 bits, outside the file
  expect_load_error([&] { load(bytes); }, kFile, "token_embd.weight", "needs 4294967296 bytes");
  patch<uint32_t>(bytes, info, 5);  // n_dims
  expect_load_error([&] { load(bytes); }, kFile, "token_embd.weight", "n_dims 5");
}

TEST(GgufLoaderBadInput, UnknownGgmlTypeNamesTensorAndType) {
  std::vector<uint8_t> bytes = good_file();
  patch<uint32_t>(bytes, tensor_info(bytes, "output.weight") + 4 + 16, 99);
  expect_load_error([&] { load(bytes); }, kFile, "output.weight",
                    "ggml type 99 is not in nanoserve's table");
}

TEST(GgufLoaderBadInput, MissingOrMisshapenTensorsAreRejected) {
  std::vector<uint8_t> bytes = good_file();
  const size_t name = find_bytes(bytes, "blk.1.ffn_up.weight");
  bytes[name] = 'X';  // renamed: the real one is missing
  expect_load_error([&] { load(bytes); }, kFile, "blk.1.ffn_up.weight", "tensor is missing");
  bytes = good_file();
  const size_t info = tensor_info(bytes, "blk.0.ffn_gate.weight");  // [8, 12]
  patch<uint64_t>(bytes, info + 4, 12);
  patch<uint64_t>(bytes, info + 12, 8);
  expect_load_error([&] { load(bytes); }, kFile, "blk.0.ffn_gate.weight",
                    "has shape [12, 8], expected [8, 12]");
}

TEST(GgufLoaderBadInput, NanWeightNamesTheTensor) {
  std::vector<uint8_t> bytes = good_file();
  const GgufFile f = parse_gguf(bytes.data(), bytes.size(), "x");
  const GgufTensorInfo* t = f.find_tensor("blk.1.attn_output.weight");
  patch<float>(bytes, f.data_offset + t->offset + 4 * 5, std::nanf(""));
  expect_load_error([&] { load(bytes); }, kFile, "blk.1.attn_output.weight", "element 5 is NaN");
}

TEST(GgufLoaderBadInput, MetadataThatIsNotALlamaIsRejected) {
  expect_load_error([&] { load(file_with({}, "general.architecture")); }, kFile,
                    "general.architecture", "missing");
  std::vector<uint8_t> bytes = good_file();
  bytes[find_gguf_string(bytes, "llama")] = 'x';  // the architecture value -> "xlama"
  expect_load_error([&] { load(bytes); }, kFile, "general.architecture",
                    "\"xlama\" is not supported");
  expect_load_error([&] { load(file_with({}, "llama.block_count")); }, kFile, "llama.block_count",
                    "missing");
  expect_load_error(
      [&] {
        load(file_with({{"llama.rope.scaling.type", gguf_string("yarn")}}));
      },
      kFile, "llama.rope.scaling.type", "\"yarn\" is not supported");
  expect_load_error(
      [&] { load(file_with({{"llama.rope.scaling.type", gguf_string("linear")}})); }, kFile,
      "llama.rope.scaling.factor", "missing");
  const Model linear =
      load(file_with({{"llama.rope.scaling.type", gguf_string("linear")},
                      {"llama.rope.scaling.factor", gguf_float32(4.0f)}}));
  EXPECT_EQ(linear.config.rope_scaling.type, RopeScalingType::kLinear);
  EXPECT_EQ(linear.config.rope_scaling.factor, 4.0f);
}

TEST(GgufLoaderBadInput, AbsurdOrInconsistentDimensionsAreRejected) {
  auto with_u32 = [](const std::string& key, uint32_t value) {
    std::vector<uint8_t> bytes = good_file();
    patch<uint32_t>(bytes, find_gguf_string(bytes, key) + key.size() + 4, value);
    return bytes;
  };
  // A field outside its range is named by its GGUF key, as it is read.
  expect_load_error([&] { load(with_u32("llama.block_count", 1u << 30)); }, kFile,
                    "llama.block_count", "outside [1, 1024]");
  expect_load_error([&] { load(with_u32("llama.attention.head_count_kv", 3)); }, kFile,
                    "llama.attention.head_count_kv");
  expect_load_error([&] { load(with_u32("llama.rope.dimension_count", 2)); }, kFile,
                    "llama.rope.dimension_count", "partial rotary");
  expect_load_error([&] { load(with_u32("llama.embedding_length", 16)); }, kFile,
                    "token_embd.weight", "expected [16, 10]");
  expect_load_error(
      [&] {
        load(file_with({{"llama.attention.layer_norm_rms_epsilon", gguf_float32(-1.0f)}},
                       "llama.attention.layer_norm_rms_epsilon"));
      },
      kFile, "llama.attention.layer_norm_rms_epsilon", "not a positive finite float");
}

TEST(GgufVocabularyBadInput, SpecialIdsAndArrayLengthsAreChecked) {
  auto vocab = [](const std::vector<uint8_t>& bytes) {
    return load_gguf_vocabulary_from_memory(bytes.data(), bytes.size(), kFile);
  };
  EXPECT_EQ(vocab(good_file()).tokens.size(), 10u);
  std::vector<uint8_t> bytes = good_file();
  const std::string bos = "tokenizer.ggml.bos_token_id";
  patch<uint32_t>(bytes, find_gguf_string(bytes, bos) + bos.size() + 4, 10);
  expect_load_error([&] { vocab(bytes); }, kFile, bos,
                    "token id 10 is outside the vocabulary of 10");
  GgufArray short_scores{GgufType::kFloat32, {GgufValue{1.0f}}};
  expect_load_error(
      [&] {
        vocab(file_with({{"tokenizer.ggml.scores", GgufValue{short_scores}}},
                        "tokenizer.ggml.scores"));
      },
      kFile, "tokenizer.ggml.scores", "1 entries for 10 tokens");
  expect_load_error([&] { vocab(file_with({}, "tokenizer.ggml.tokens")); }, kFile,
                    "tokenizer.ggml.tokens", "is missing");
  // The embedding's row count is the vocabulary size; the token list must agree with it.
  GgufArray tokens{GgufType::kString, {GgufValue{std::string("a")}}};
  expect_load_error(
      [&] {
        load(file_with({{"tokenizer.ggml.tokens", GgufValue{tokens}}}, "tokenizer.ggml.tokens"));
      },
      kFile, "tokenizer.ggml.tokens", "1 tokens, but token_embd.weight has 10 rows");
}

}  // namespace
}  // namespace nanoserve
