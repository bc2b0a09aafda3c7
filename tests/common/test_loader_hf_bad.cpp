// Hugging Face bad input: corrupt safetensors containers and config.json files that are not
// a Llama nanoserve can run are LoadErrors naming the file and the field.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/loaders/hf_loader.h"
#include "common/loaders/safetensors_file.h"
#include "loader_test_files.h"
#include "test_support.h"

namespace nanoserve {
namespace {

using nlohmann::json;
using testing::expect_load_error;
using testing::patch;

const std::string kSt = "m/model.safetensors";
const std::string kConfig = "m/config.json";

HfCheckpoint good() {
  Model m = testing::micro_model(false);
  m.config.rope_style = RopeStyle::kRotateHalf;
  return save_hf(m, "F32");
}

Model load(const std::string& config, const std::vector<uint8_t>& st) {
  return load_hf_from_memory(config, st.data(), st.size(), "m");
}

/// The good checkpoint with its safetensors header JSON edited by `edit`.
std::vector<uint8_t> with_header(const std::function<void(json&)>& edit) {
  const HfCheckpoint g = good();
  const SafetensorsFile f = parse_safetensors(g.safetensors.data(), g.safetensors.size(), "g");
  json header = json::parse(g.safetensors.begin() + 8, g.safetensors.begin() + long(f.data_offset));
  edit(header);
  const std::string text = header.dump();
  std::vector<uint8_t> out(8);
  patch<uint64_t>(out, 0, text.size());
  out.insert(out.end(), text.begin(), text.end());
  out.insert(out.end(), g.safetensors.begin() + long(f.data_offset), g.safetensors.end());
  return out;
}

/// The good config.json edited by `edit`.
std::string with_config(const std::function<void(json&)>& edit) {
  json config = json::parse(good().config_json);
  edit(config);
  return config.dump();
}

TEST(HfLoaderBadInput, GoodCheckpointLoads) {
  EXPECT_NO_THROW(load(good().config_json, good().safetensors));
}

TEST(HfLoaderBadInput, TruncatedSafetensorsAreRejectedAtEveryCut) {
  const HfCheckpoint g = good();
  for (size_t cut : {size_t(0), size_t(7), size_t(8), size_t(50), size_t(400),
                     g.safetensors.size() / 2, g.safetensors.size() - 1}) {
    SCOPED_TRACE("cut at " + std::to_string(cut));
    const std::vector<uint8_t> bytes(g.safetensors.begin(), g.safetensors.begin() + long(cut));
    try {
      load(g.config_json, bytes);
      ADD_FAILURE() << "loaded a truncated file";
    } catch (const LoadError& e) {
      EXPECT_EQ(e.file(), kSt);
    }
  }
}

TEST(HfLoaderBadInput, HeaderLengthBeyondTheFileFailsFast) {
  std::vector<uint8_t> bytes = good().safetensors;
  const auto start = std::chrono::steady_clock::now();
  patch<uint64_t>(bytes, 0, ~uint64_t(0));
  expect_load_error([&] { load(good().config_json, bytes); }, kSt, "header length");
  patch<uint64_t>(bytes, 0, bytes.size() - 7);  // one byte more than follows
  expect_load_error([&] { load(good().config_json, bytes); }, kSt, "header length");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(100));
}

TEST(HfLoaderBadInput, HeaderThatIsNotJsonIsRejected) {
  std::vector<uint8_t> bytes = good().safetensors;
  bytes[8] = '[';
  bytes[9] = '}';
  expect_load_error([&] { load(good().config_json, bytes); }, kSt, "header", "is not valid JSON");
  expect_load_error(
      [&] { load(good().config_json, with_header([](json& h) { h = json::array(); })); }, kSt,
      "header", "not a JSON object");
}

TEST(HfLoaderBadInput, BadTensorEntriesNameTheTensor) {
  const std::string q = "model.layers.1.self_attn.q_proj.weight";
  const std::string cfg = good().config_json;
  expect_load_error([&] { load(cfg, with_header([&](json& h) { h[q]["dtype"] = "Q4"; })); }, kSt,
                    q + ".dtype", "unknown dtype \"Q4\"");
  expect_load_error([&] { load(cfg, with_header([&](json& h) { h[q].erase("shape"); })); }, kSt, q,
                    "no \"shape\"");
  expect_load_error([&] { load(cfg, with_header([&](json& h) {
                                 h[q]["shape"] = {8, -8};
                               })); }, kSt,
                    q + ".shape", "non-negative integer");
  expect_load_error(
      [&] {
        load(cfg, with_header([&](json& h) { h[q]["shape"] = {1ull << 40, 1ull << 40}; }));
      },
      kSt, q + ".shape", "overflows");
  expect_load_error(
      [&] {
        load(cfg, with_header([&](json& h) { h[q]["data_offsets"] = {0, 1ull << 40}; }));
      },
      kSt, q + ".data_offsets", "not inside the data section");
  expect_load_error([&] { load(cfg, with_header([&](json& h) { h[q]["data_offsets"][1] = 8; })); },
                    kSt, q + ".data_offsets", "not inside");  // end before begin
  expect_load_error([&] { load(cfg, with_header([&](json& h) {
                                 h[q]["shape"] = {8, 4};
                               })); }, kSt,
                    q + ".data_offsets", "needs 128");
  expect_load_error([&] { load(cfg, with_header([&](json& h) { h["__metadata__"]["x"] = 3; })); },
                    kSt, "__metadata__.x", "not a string");
}

TEST(HfLoaderBadInput, OverlappingTensorsAreRejected) {
  const std::vector<uint8_t> bytes = with_header([](json& h) {
    h["model.norm.weight"]["data_offsets"] = h["model.embed_tokens.weight"]["data_offsets"];
    h["model.norm.weight"]["data_offsets"][1] = 32;  // 8 floats inside the embedding
  });
  expect_load_error([&] { load(good().config_json, bytes); }, kSt, "model.norm.weight.data_offsets",
                    "overlaps tensor model.embed_tokens.weight");
}

TEST(HfLoaderBadInput, MissingMisshapenOrUnsupportedTensorsAreRejected) {
  const std::string cfg = good().config_json;
  const std::string down = "model.layers.0.mlp.down_proj.weight";
  expect_load_error([&] { load(cfg, with_header([&](json& h) { h.erase(down); })); }, kSt, down,
                    "tensor is missing");
  expect_load_error([&] { load(cfg, with_header([&](json& h) {
                                 h[down]["shape"] = {12, 8};
                               })); },
                    kSt, down, "has shape [12,8], expected [8,12]");
  expect_load_error([&] { load(cfg, with_header([&](json& h) { h[down]["dtype"] = "I32"; })); },
                    kSt, down, "dtype I32 is not supported");
}

TEST(HfLoaderBadInput, NanWeightNamesTheTensor) {
  const HfCheckpoint g = good();
  std::vector<uint8_t> bytes = g.safetensors;
  const SafetensorsFile f = parse_safetensors(bytes.data(), bytes.size(), "g");
  const SafetensorsTensor* t = f.find("model.layers.1.mlp.up_proj.weight");
  patch<float>(bytes, f.data_offset + t->begin + 4 * 7, -std::numeric_limits<float>::infinity());
  expect_load_error([&] { load(g.config_json, bytes); }, kSt, "model.layers.1.mlp.up_proj.weight",
                    "element 7 is infinite");
}

TEST(HfLoaderBadInput, ConfigThatIsNotJsonOrNotALlamaIsRejected) {
  const std::vector<uint8_t> st = good().safetensors;
  expect_load_error([&] { load("{\"hidden_size\": 8,", st); }, kConfig + ":1", "json",
                    "not valid JSON");
  expect_load_error([&] { load("[1, 2]", st); }, kConfig, "json", "not a JSON object");
  expect_load_error(
      [&] {
        load(with_config([](json& c) {
               c["model_type"] = "gpt2";
               c["architectures"] = {"GPT2LMHeadModel"};
             }),
             st);
      },
      kConfig, "model_type", "supported are \"llama\"");
  expect_load_error([&] { load(with_config([](json& c) { c["hidden_act"] = "gelu"; }), st); },
                    kConfig, "hidden_act", "\"gelu\" is not supported");
  expect_load_error(
      [&] {
        load(with_config([](json& c) {
               c["rope_scaling"] = {{"type", "yarn"}, {"factor", 2.0}};
             }),
             st);
      },
      kConfig, "rope_scaling.rope_type", "\"yarn\" is not supported");
  expect_load_error([&] { load(with_config([](json& c) { c["attention_bias"] = true; }), st); },
                    kConfig, "attention_bias", "o_proj and MLP biases are not");
}

TEST(HfLoaderBadInput, MissingAbsurdOrInconsistentConfigValuesAreRejected) {
  const std::vector<uint8_t> st = good().safetensors;
  expect_load_error([&] { load(with_config([](json& c) { c.erase("hidden_size"); }), st); },
                    kConfig, "hidden_size", "is missing");
  expect_load_error(
      [&] { load(with_config([](json& c) { c["num_hidden_layers"] = 1 << 30; }), st); }, kConfig,
      "num_hidden_layers", "outside [1, 1024]");
  expect_load_error([&] { load(with_config([](json& c) { c["num_hidden_layers"] = "2"; }), st); },
                    kConfig, "num_hidden_layers", "not an integer");
  expect_load_error([&] { load(with_config([](json& c) { c["num_key_value_heads"] = 3; }), st); },
                    kConfig, "num_key_value_heads");
  expect_load_error([&] { load(with_config([](json& c) { c["rms_norm_eps"] = -1; }), st); },
                    kConfig, "rms_norm_eps", "not a positive finite number");
  expect_load_error(
      [&] { load(with_config([](json& c) { c["tie_word_embeddings"] = "yes"; }), st); }, kConfig,
      "tie_word_embeddings", "not a boolean");
  // A config that disagrees with the tensors: the tensor shape check catches it.
  expect_load_error([&] { load(with_config([](json& c) { c["vocab_size"] = 11; }), st); }, kSt,
                    "model.embed_tokens.weight", "expected [11,8]");
}

TEST(HfLoaderBadInput, DirectoryProblemsNameTheMissingFile) {
  const std::string dir = ::nanoserve::testing::temp_dir() + "hf_sharded";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/config.json") << good().config_json;
  std::ofstream(dir + "/model.safetensors.index.json") << "{}";
  expect_load_error([&] { load_hf_model(dir); }, dir + "/model.safetensors.index.json",
                    "weight_map", "is missing");
  std::ofstream(dir + "/model.safetensors.index.json")
      << R"({"weight_map": {"model.norm.weight": "model-00001-of-00002.safetensors"}})";
  expect_load_error([&] { load_hf_model(dir); }, dir + "/model.safetensors.index.json",
                    "weight_map", "names shard model-00001-of-00002.safetensors, which is not in");
  const std::string empty = ::nanoserve::testing::temp_dir() + "hf_empty";
  std::filesystem::create_directories(empty);
  expect_load_error([&] { load_hf_model(empty); }, empty + "/config.json", "file", "cannot open");
}

}  // namespace
}  // namespace nanoserve
