// Hugging Face checkpoints in the layout of the real ones: sharded bf16 safetensors with
// `model.safetensors.index.json`, for LlamaForCausalLM (Llama 3.1's llama3 rope_scaling, GQA,
// untied), Qwen2ForCausalLM (q/k/v biases, rope θ 1e6, tied) and MistralForCausalLM (an
// explicit head_dim); and the bad files of each new kind.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/allclose.h"
#include "common/error.h"
#include "common/loaders/hf_loader.h"
#include "common/loaders/safetensors_file.h"
#include "common/loaders/synthetic_hf.h"
#include "common/oracle/forward.h"
#include "common/oracle/ops.h"
#include "common/tolerances.h"
#include "loader_test_files.h"
#include "test_support.h"

namespace nanoserve {
namespace {

using nlohmann::json;
using testing::expect_load_error;

/// A small random model of `arch` whose every weight is already a bf16 value: the one
/// `peers/write_hf_checkpoints` writes for the comparison with transformers.
Model small_model(const std::string& arch) { return make_synthetic_hf_model(arch); }

/// Writes `ckpt` into a fresh directory and returns its path.
std::string write_dir(const std::string& name, const HfShardedCheckpoint& ckpt) {
  const std::string dir = ::nanoserve::testing::temp_dir() + name;
  std::filesystem::remove_all(dir);
  write_hf_checkpoint(ckpt, dir);
  return dir;
}

std::vector<HfShard> shards_of(const HfShardedCheckpoint& c) {
  std::vector<HfShard> out;
  for (const auto& [file, bytes] : c.shards) out.push_back({file, bytes.data(), bytes.size()});
  return out;
}

const std::vector<int> kTokens = {1, 17, 42, 5, 88, 60, 3, 29, 71, 11, 0, 95};

class HfShardedArchitectures : public ::testing::TestWithParam<std::string> {};

TEST_P(HfShardedArchitectures, ThreeBf16ShardsLoadToTheSavedWeightsAndTheirLogits) {
  const Model want = small_model(GetParam());
  const HfShardedCheckpoint ckpt = save_hf_sharded(want, "BF16", 3);
  ASSERT_EQ(ckpt.shards.size(), 3u);
  EXPECT_EQ(ckpt.shards[1].first, "model-00002-of-00003.safetensors");
  const Model got = load_hf_model(write_dir("hf_sharded_" + GetParam(), ckpt));
  const ModelConfig &g = got.config, &w = want.config;
  EXPECT_EQ(g.architecture, w.architecture);
  EXPECT_EQ(g.head_dim, w.head_dim);
  EXPECT_EQ(g.rope_theta, w.rope_theta);
  EXPECT_EQ(g.rope_scaling.type, w.rope_scaling.type);
  EXPECT_EQ(g.rope_scaling.factor, w.rope_scaling.factor);
  EXPECT_EQ(g.rope_scaling.original_max_position_embeddings,
            w.rope_scaling.original_max_position_embeddings);
  EXPECT_EQ(g.attention_bias, w.attention_bias);
  EXPECT_EQ(g.tied_classifier, w.tied_classifier);
  testing::expect_same_weights(got, want);  // bf16 values round-trip exactly
  // The oracle on the loaded model computes what it computes on the weights that were saved.
  EXPECT_EQ(oracle::forward_prompt(got, kTokens), oracle::forward_prompt(want, kTokens));
}

TEST_P(HfShardedArchitectures, TheSameCheckpointLoadsFromMemory) {
  const Model want = small_model(GetParam());
  const HfShardedCheckpoint ckpt = save_hf_sharded(want, "BF16", 2);
  const Model got =
      load_hf_sharded_from_memory(ckpt.config_json, ckpt.index_json, shards_of(ckpt), "m");
  testing::expect_same_weights(got, want);
}

INSTANTIATE_TEST_SUITE_P(Families, HfShardedArchitectures,
                         ::testing::Values("llama", "qwen2", "mistral"));

TEST(SyntheticHfModel, AnUnknownArchitectureIsRefusedNamingTheKnownOnes) {
  EXPECT_EQ(synthetic_hf_architectures(), (std::vector<std::string>{"llama", "qwen2", "mistral"}));
  try {
    make_synthetic_hf_model("gemma");
    FAIL() << "no exception";
  } catch (const InvalidArgument& e) {
    EXPECT_STREQ(e.what(), "synthetic HF model: architecture 'gemma' is not one of llama, qwen2, mistral");
  }
}

TEST(SyntheticHfModel, NormGainsAndBiasesAreDrawnNotConstant) {
  // A gain or bias read into the wrong place must change the logits: no two of them equal.
  const Model m = make_synthetic_hf_model("qwen2");
  const LayerWeights& w = m.layers[0];
  EXPECT_NE(w.attn_norm, w.ffn_norm);
  EXPECT_NE(w.attn_norm, m.final_norm);
  EXPECT_NE(w.attn_norm, m.layers[1].attn_norm);
  EXPECT_NE(w.bk, w.bv);
  EXPECT_NE(w.attn_norm[0], w.attn_norm[1]);
}

TEST(HfShardedFeatures, Llama3ScalingAndQwen2BiasesChangeTheLogits) {
  // Each feature is read and used: dropping it from the loaded model moves the logits.
  for (const std::string arch : {"llama", "qwen2"}) {
    const Model m = small_model(arch);
    Model plain = m;
    plain.config.rope_scaling = {};
    plain.config.attention_bias = false;
    for (LayerWeights& w : plain.layers) w.bq = w.bk = w.bv = {};
    const std::vector<float> a = oracle::forward_prompt(m, kTokens);
    const std::vector<float> b = oracle::forward_prompt(plain, kTokens);
    float max_diff = 0.0f;
    for (size_t i = 0; i < a.size(); ++i) max_diff = std::max(max_diff, std::fabs(a[i] - b[i]));
    EXPECT_GT(max_diff, 1e-3f) << arch;
  }
}

TEST(HfShardedFeatures, Qwen2BiasedForwardOfOneTokenMatchesAHandWrittenBlock) {
  // At position 0 RoPE is the identity and attention over the one key returns its value, so a
  // block is  x += Wo (Wv xn + bv)  (each KV head shared by its query heads), then the FFN:
  // a forward written out here from the definitions, independent of the oracle's attention.
  const Model m = small_model("qwen2");
  const ModelConfig& c = m.config;
  const int token = 42;
  std::vector<float> x(m.token_embedding.begin() + token * c.dim,
                       m.token_embedding.begin() + (token + 1) * c.dim);
  auto norm = [&](const std::vector<float>& in, const std::vector<float>& g) {
    std::vector<float> out(in.size());
    oracle::rmsnorm(in.data(), g.data(), 1, int(in.size()), c.norm_eps, out.data());
    return out;
  };
  auto mv = [](const std::vector<float>& W, const std::vector<float>& v, int rows) {
    std::vector<float> y(size_t(rows), 0.0f);
    const size_t cols = v.size();
    for (int r = 0; r < rows; ++r) {
      double acc = 0.0;
      for (size_t k = 0; k < cols; ++k) acc += double(W[size_t(r) * cols + k]) * v[k];
      y[size_t(r)] = float(acc);
    }
    return y;
  };
  for (const LayerWeights& w : m.layers) {
    const std::vector<float> xn = norm(x, w.attn_norm);
    std::vector<float> v = mv(w.wv, xn, c.kv_dim());
    for (int i = 0; i < c.kv_dim(); ++i) v[size_t(i)] += w.bv[size_t(i)];
    std::vector<float> att(size_t(c.q_dim()));
    for (int h = 0; h < c.n_heads; ++h) {
      for (int i = 0; i < c.head_dim; ++i) {
        att[size_t(h * c.head_dim + i)] = v[size_t((h / c.gqa_group()) * c.head_dim + i)];
      }
    }
    const std::vector<float> o = mv(w.wo, att, c.dim);
    for (int i = 0; i < c.dim; ++i) x[size_t(i)] += o[size_t(i)];
    const std::vector<float> fn = norm(x, w.ffn_norm);
    const std::vector<float> gate = mv(w.w1, fn, c.hidden_dim), up = mv(w.w3, fn, c.hidden_dim);
    std::vector<float> hid(gate.size());
    for (size_t i = 0; i < hid.size(); ++i) {
      hid[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
    }
    const std::vector<float> down = mv(w.w2, hid, c.dim);
    for (int i = 0; i < c.dim; ++i) x[size_t(i)] += down[size_t(i)];
  }
  const std::vector<float> want = mv(m.classifier_weights(), norm(x, m.final_norm), c.vocab_size);
  const CloseResult r = allclose(oracle::forward_prompt(m, {token}), want, tol::kFp32Forward);
  EXPECT_TRUE(r.ok) << "one-token qwen2 logits: " << r.summary();
}

// ---------------------------------------------------------------------------------------------
// Bad sharded files and configs

HfShardedCheckpoint good_sharded() { return save_hf_sharded(small_model("qwen2"), "BF16", 2); }

Model load_sharded(const HfShardedCheckpoint& c) {
  return load_hf_sharded_from_memory(c.config_json, c.index_json, shards_of(c), "m");
}

const std::string kIndex = "m/model.safetensors.index.json";
const std::string kShard1 = "m/model-00001-of-00002.safetensors";
const std::string kShard2 = "m/model-00002-of-00002.safetensors";

/// `c` with the index's JSON edited by `edit`.
HfShardedCheckpoint with_index(HfShardedCheckpoint c, const std::function<void(json&)>& edit) {
  json j = json::parse(c.index_json);
  edit(j);
  c.index_json = j.dump();
  return c;
}

/// `c` with shard `s` rebuilt from its tensors after `edit` changes the list.
HfShardedCheckpoint with_shard(HfShardedCheckpoint c, size_t s,
                               const std::function<void(std::vector<SafetensorsEntry>&)>& edit) {
  const std::vector<uint8_t>& bytes = c.shards[s].second;
  const SafetensorsFile f = parse_safetensors(bytes.data(), bytes.size(), "s");
  std::vector<SafetensorsEntry> entries;
  for (const SafetensorsTensor& t : f.tensors) {
    const uint8_t* p = f.tensor_data(t);
    entries.push_back({t.name, t.dtype->name, t.shape, {p, p + (t.end - t.begin)}});
  }
  edit(entries);
  c.shards[s].second = save_safetensors(entries, {});
  return c;
}

TEST(HfShardedBadInput, AnIndexNamingAMissingShardIsRefused) {
  HfShardedCheckpoint c = good_sharded();
  c.shards.pop_back();
  expect_load_error([&] { load_sharded(c); }, kIndex, "weight_map",
                    "names shard model-00002-of-00002.safetensors, which is not in m");
}

TEST(HfShardedBadInput, AnIndexThatPlacesATensorInTheWrongShardIsRefused) {
  const HfShardedCheckpoint c = with_index(good_sharded(), [](json& j) {
    j["weight_map"]["model.norm.weight"] = "model-00001-of-00002.safetensors";
  });
  expect_load_error([&] { load_sharded(c); }, kShard2, "model.norm.weight",
                    "the index places it in \"model-00001-of-00002.safetensors\"");
}

TEST(HfShardedBadInput, AnIndexedTensorAbsentFromItsShardIsRefused) {
  const HfShardedCheckpoint c = with_index(good_sharded(), [](json& j) {
    j["weight_map"]["model.layers.9.mlp.up_proj.weight"] = "model-00001-of-00002.safetensors";
  });
  expect_load_error([&] { load_sharded(c); }, kIndex, "weight_map.model.layers.9.mlp.up_proj.weight",
                    "which does not contain it");
}

TEST(HfShardedBadInput, ATensorStoredInTwoShardsIsRefused) {
  const HfShardedCheckpoint c = with_shard(good_sharded(), 1, [](std::vector<SafetensorsEntry>& e) {
    e.push_back({"model.embed_tokens.weight", "BF16", {1}, {0, 0}});
  });
  expect_load_error([&] { load_sharded(c); }, kShard2, "model.embed_tokens.weight",
                    "is stored twice: also in " + kShard1);
}

TEST(HfShardedBadInput, AStoredTensorTheIndexDoesNotListIsRefused) {
  const HfShardedCheckpoint c = with_shard(good_sharded(), 1, [](std::vector<SafetensorsEntry>& e) {
    e.push_back({"model.extra.weight", "BF16", {1}, {0, 0}});
  });
  expect_load_error([&] { load_sharded(c); }, kShard2, "model.extra.weight",
                    "not listed in the index");
}

TEST(HfShardedBadInput, AShapeThatDisagreesWithTheConfigNamesTheShard) {
  // The last shard's down_proj of layer 1 stored as [dim, hidden / 2]: the other shard's
  // tensors (and the config) say [dim, hidden].
  const HfShardedCheckpoint c = with_shard(good_sharded(), 1, [](std::vector<SafetensorsEntry>& e) {
    for (SafetensorsEntry& t : e) {
      if (t.name == "model.layers.1.mlp.down_proj.weight") {
        t.shape = {64, 64};
        t.bytes.resize(64 * 64 * 2);
      }
    }
  });
  expect_load_error([&] { load_sharded(c); }, kShard2, "model.layers.1.mlp.down_proj.weight",
                    "has shape [64,64], expected [64,128]");
}

TEST(HfShardedBadInput, ShardNamesOutsideTheDirectoryAndMalformedIndexesAreRefused) {
  const HfShardedCheckpoint good = good_sharded();
  for (const char* bad : {"../model.safetensors", "sub/x.safetensors", "", ".."}) {
    const HfShardedCheckpoint c =
        with_index(good, [&](json& j) { j["weight_map"]["model.norm.weight"] = bad; });
    expect_load_error([&] { load_sharded(c); }, kIndex, "weight_map.model.norm.weight",
                      "is not a file name inside the checkpoint directory");
  }
  HfShardedCheckpoint c = good;
  c.index_json = "{\"weight_map\": [1]}";
  expect_load_error([&] { load_sharded(c); }, kIndex, "weight_map", "not an object");
  c.index_json = "{\"weight_map\": {}}";
  expect_load_error([&] { load_sharded(c); }, kIndex, "weight_map", "is empty");
  c.index_json = "{\"weight_map\": {\"a\": 3}}";
  expect_load_error([&] { load_sharded(c); }, kIndex, "weight_map.a", "is not a string");
  c.index_json = "{\"weight_map\": ";
  expect_load_error([&] { load_sharded(c); }, kIndex + ":1", "json", "not valid JSON");
}

TEST(HfShardedBadInput, AQwen2CheckpointWithoutItsBiasesIsRefused) {
  const HfShardedCheckpoint c = with_index(
      with_shard(good_sharded(), 0,
                 [](std::vector<SafetensorsEntry>& e) {
                   e.erase(std::remove_if(e.begin(), e.end(),
                                          [](const SafetensorsEntry& t) {
                                            return t.name == "model.layers.0.self_attn.k_proj.bias";
                                          }),
                           e.end());
                 }),
      [](json& j) { j["weight_map"].erase("model.layers.0.self_attn.k_proj.bias"); });
  expect_load_error([&] { load_sharded(c); }, "m/model-00001-of-00002.safetensors (and the other shards)",
                    "model.layers.0.self_attn.k_proj.bias", "tensor is missing");
}

/// parse_hf_config of the llama config with `rope_scaling` set to `rs`.
ModelConfig config_with_scaling(const json& rs) {
  json cfg = json::parse(save_hf(small_model("llama"), "F32").config_json);
  cfg["rope_scaling"] = rs;
  return parse_hf_config(cfg.dump(), "c.json");
}

TEST(HfConfigRopeScaling, Llama3AndLinearAreReadWithEveryParameter) {
  const ModelConfig c = config_with_scaling({{"rope_type", "llama3"},
                                             {"factor", 32.0},
                                             {"low_freq_factor", 1.0},
                                             {"high_freq_factor", 4.0},
                                             {"original_max_position_embeddings", 8192}});
  EXPECT_EQ(c.rope_scaling.type, RopeScalingType::kLlama3);
  EXPECT_EQ(c.rope_scaling.factor, 32.0f);
  EXPECT_EQ(c.rope_scaling.low_freq_factor, 1.0f);
  EXPECT_EQ(c.rope_scaling.high_freq_factor, 4.0f);
  EXPECT_EQ(c.rope_scaling.original_max_position_embeddings, 8192);
  // The older spelling "type" (TinyLlama-era configs) and linear scaling.
  const ModelConfig l = config_with_scaling({{"type", "linear"}, {"factor", 4.0}});
  EXPECT_EQ(l.rope_scaling.type, RopeScalingType::kLinear);
  EXPECT_EQ(l.rope_scaling.factor, 4.0f);
  EXPECT_EQ(config_with_scaling({{"rope_type", "default"}}).rope_scaling.type,
            RopeScalingType::kNone);
  EXPECT_EQ(config_with_scaling(nullptr).rope_scaling.type, RopeScalingType::kNone);
}

TEST(HfConfigRopeScaling, BadRopeScalingIsRefusedNamingTheKey) {
  const json llama3 = {{"rope_type", "llama3"},
                       {"factor", 8.0},
                       {"low_freq_factor", 1.0},
                       {"high_freq_factor", 4.0},
                       {"original_max_position_embeddings", 8192}};
  auto without = [&](const char* key) {
    json j = llama3;
    j.erase(key);
    return j;
  };
  auto with = [&](const char* key, json v) {
    json j = llama3;
    j[key] = std::move(v);
    return j;
  };
  auto bad = [&](const json& rs, const std::string& field, const std::string& needle) {
    expect_load_error([&] { config_with_scaling(rs); }, "c.json", field, needle);
  };
  bad(without("low_freq_factor"), "rope_scaling.low_freq_factor", "is missing");
  bad(without("original_max_position_embeddings"),
      "original_max_position_embeddings", "is missing");
  bad(with("factor", -2.0), "rope_scaling.factor", "not a positive finite number");
  bad(with("factor", "8"), "rope_scaling.factor", "not a positive finite number");
  bad(with("high_freq_factor", 1.0), "rope_scaling.high_freq_factor", "must exceed");
  bad(with("original_max_position_embeddings", 0), "original_max_position_embeddings",
      "outside [1, 1048576]");
  bad(with("rope_type", "yarn"), "rope_scaling.rope_type", "\"yarn\" is not supported");
  bad(with("rope_type", 3), "rope_scaling.rope_type", "not a string");
  bad(json::array({1}), "rope_scaling", "is not an object");
  bad({{"type", "linear"}}, "rope_scaling.factor", "is missing");
}

TEST(HfConfigFamilies, QwenAndMistralConfigsMapToTheirFeatures) {
  json q = json::parse(save_hf(small_model("qwen2"), "F32").config_json);
  const ModelConfig qc = parse_hf_config(q.dump(), "q.json");
  EXPECT_EQ(qc.architecture, "qwen2");
  EXPECT_TRUE(qc.attention_bias);
  EXPECT_TRUE(qc.tied_classifier);
  EXPECT_EQ(qc.rope_theta, 1e6f);
  q["use_sliding_window"] = true;
  expect_load_error([&] { parse_hf_config(q.dump(), "q.json"); }, "q.json", "use_sliding_window",
                    "not supported");
  // Only the architectures list: the family still resolves.
  json a = json::parse(save_hf(small_model("mistral"), "F32").config_json);
  a.erase("model_type");
  EXPECT_EQ(parse_hf_config(a.dump(), "a.json").architecture, "mistral");
  EXPECT_EQ(parse_hf_config(a.dump(), "a.json").head_dim, 32);
  // Mistral-7B-v0.1's 4096-token sliding window bounds the context it is exact in.
  a["sliding_window"] = 16;
  EXPECT_EQ(parse_hf_config(a.dump(), "a.json").max_seq_len, 16);
  a["sliding_window"] = 1 << 20;
  EXPECT_EQ(parse_hf_config(a.dump(), "a.json").max_seq_len, 64);
}

}  // namespace
}  // namespace nanoserve
