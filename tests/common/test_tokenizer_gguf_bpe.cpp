// The GGUF `gpt2` vocabulary path (make_gguf_bpe_tokenizer): each byte-level family of
// tests/data/tokenizers/, written the way llama.cpp's converter stores it (one token list
// with the specials as control tokens, "a b" merges, tokenizer.ggml.pre), must give the ids
// and decodings the Hugging Face library gave for the tokenizer.json; bad metadata is refused.

#include <gtest/gtest.h>

#include "common/error.h"
#include "common/tokenizer/hf_bpe_tokenizer.h"
#include "common/tokenizer/utf8.h"
#include "tokenizer_test_support.h"

namespace nanoserve {
namespace {

struct GgufVocab {
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  std::vector<std::string> merges;
  int bos = -1, eos = -1;
};

GgufVocab gguf_vocab_of(const std::string& family) {
  const std::string dir = testing::fixture_path("tokenizers/" + family);
  const auto j = nlohmann::json::parse(testing::read_text(dir + "/tokenizer.json"));
  const auto config = nlohmann::json::parse(testing::read_text(dir + "/tokenizer_config.json"));
  GgufVocab v;
  for (const auto& [piece, id] : j["model"]["vocab"].items()) {
    if (v.tokens.size() <= id.get<size_t>()) v.tokens.resize(id.get<size_t>() + 1);
    v.tokens[id.get<size_t>()] = piece;
  }
  v.types.assign(v.tokens.size(), 1);
  for (const auto& t : j["added_tokens"]) {
    const size_t id = t["id"];
    if (v.tokens.size() <= id) {
      v.tokens.resize(id + 1);
      v.types.resize(id + 1, 1);
    }
    v.tokens[id] = t["content"];
    v.types[id] = 3;  // control
  }
  for (const auto& m : j["model"]["merges"]) {
    v.merges.push_back(m[0].get<std::string>() + " " + m[1].get<std::string>());
  }
  auto id_of = [&](const nlohmann::json& name) {
    if (name.is_null()) return -1;
    for (size_t i = 0; i < v.tokens.size(); ++i) {
      if (v.tokens[i] == name.get<std::string>()) return int(i);
    }
    return -2;
  };
  v.bos = id_of(config["bos_token"]);
  v.eos = id_of(config["eos_token"]);
  return v;
}

std::string from_hex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  }
  return out;
}

struct Family {
  const char* name;
  const char* pre;  // tokenizer.ggml.pre llama.cpp writes for that model
};

class GgufBpeFamily : public ::testing::TestWithParam<Family> {};

TEST_P(GgufBpeFamily, EncodesLikeTheTokenizerJsonInTheLibrary) {
  const Family f = GetParam();
  const GgufVocab v = gguf_vocab_of(f.name);
  const auto tok = make_gguf_bpe_tokenizer("m.gguf", v.tokens, v.types, v.merges, f.pre, v.bos, v.eos);
  const auto cases = nlohmann::json::parse(testing::read_text(
      testing::fixture_path(std::string("tokenizers/") + f.name + "/cases.json")))["cases"];
  ASSERT_GT(cases.size(), 10u);
  for (const auto& c : cases) {
    const std::string text = c.contains("hex") ? from_hex(c["hex"]) : c["text"].get<std::string>();
    const auto ids = c["ids"].get<std::vector<int>>();
    EXPECT_EQ(tok->encode(text, false, false), ids) << f.name << ": " << text;
    EXPECT_EQ(tok->decode_all(ids), c["decoded"].get<std::string>()) << f.name << ": " << text;
  }
}

INSTANTIATE_TEST_SUITE_P(Families, GgufBpeFamily,
                         ::testing::Values(Family{"llama3", "llama-bpe"}, Family{"qwen2", "qwen2"},
                                           Family{"smollm2", "smollm"}, Family{"gpt2", "gpt2"}));

void expect_load_error(const std::function<void()>& f, const std::string& field) {
  try {
    f();
    ADD_FAILURE() << "accepted; expected a LoadError for " << field;
  } catch (const LoadError& e) {
    EXPECT_EQ(e.field(), field) << e.what();
  }
}

TEST(GgufBpeTokenizer, RefusesBadMetadataByKey) {
  const GgufVocab v = gguf_vocab_of("llama3");
  auto make = [&](GgufVocab w, const std::string& pre) {
    return [w, pre] { make_gguf_bpe_tokenizer("m.gguf", w.tokens, w.types, w.merges, pre, w.bos, w.eos); };
  };
  expect_load_error(make(v, "falcon"), "tokenizer.ggml.pre");
  GgufVocab bad = v;
  bad.merges[3] = "Ġ";
  expect_load_error(make(bad, "llama-bpe"), "tokenizer.ggml.merges[3]");
  bad = v;
  bad.merges[0] = "q\xC3\xBF \xC3\xBFq";  // parts not in the vocabulary
  expect_load_error(make(bad, "llama-bpe"), "tokenizer.ggml.merges[0]");
  bad = v;
  bad.types.pop_back();
  expect_load_error(make(bad, "llama-bpe"), "tokenizer.ggml.token_type");
  bad = v;
  bad.eos = -1;
  expect_load_error(make(bad, "llama-bpe"), "tokenizer.ggml.eos_token_id");
  bad = v;
  bad.tokens[5] = bad.tokens[6];
  expect_load_error(make(bad, "llama-bpe"), "tokenizer.ggml.tokens");
}

}  // namespace
}  // namespace nanoserve
