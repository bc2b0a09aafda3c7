// tokenizer.json parsing: what is accepted, and a LoadError naming the JSON field for every
// configuration HfBpeTokenizer does not implement or that is inconsistent. Each case mutates
// the synthetic tests/data/hf_tiny/tokenizer.json, which is valid as committed.

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>

#include "common/error.h"
#include "common/tokenizer/hf_bpe_tokenizer.h"
#include "test_support.h"
#include "tokenizer_test_support.h"

namespace nanoserve {
namespace {

using nlohmann::json;

const char* const kConfig = R"({"bos_token": "<s>", "eos_token": {"content": "</s>"}})";

json tiny_json() {
  return json::parse(testing::read_text(testing::fixture_path("hf_tiny/tokenizer.json")));
}

std::unique_ptr<HfBpeTokenizer> parse(const std::string& text,
                                      const std::string& config = kConfig) {
  return parse_hf_tokenizer(text, "tokenizer.json", config, "tokenizer_config.json");
}

// Expects LoadError(file, field, …) from parsing `text`.
void expect_error(const std::string& text, const std::string& file, const std::string& field,
                  const std::string& config = kConfig) {
  try {
    parse(text, config);
    ADD_FAILURE() << "accepted; expected a LoadError for " << field;
  } catch (const LoadError& e) {
    EXPECT_EQ(e.file(), file) << e.what();
    EXPECT_EQ(e.field(), field) << e.what();
  }
}

TEST(HfTokenizerJson, AcceptsTheCommittedFixtureAndBothMergeSpellings) {
  const auto tok = parse(tiny_json().dump());
  EXPECT_EQ(tok->vocab_size(), 20);
  EXPECT_EQ(tok->bos_id(), 1);
  EXPECT_EQ(tok->eos_id(), 2);
  json pairs = tiny_json();  // newer files write merges as ["left", "right"]
  for (json& m : pairs["model"]["merges"]) {
    const std::string s = m;
    m = json::array({s.substr(0, s.find(' ')), s.substr(s.find(' ') + 1)});
  }
  EXPECT_EQ(parse(pairs.dump())->encode("the abc", false, false),
            tok->encode("the abc", false, false));
}

TEST(HfTokenizerJson, NullNormalizerAndDecoderMeanIdentity) {
  json j = tiny_json();
  j["normalizer"] = nullptr;
  j["decoder"] = nullptr;
  const auto tok = parse(j.dump());
  // No "▁" prefix: "abc" → a b c; "a b"(rank 4) → ab c; "ab c"(5) → abc (id 18).
  EXPECT_EQ(tok->encode("abc", false, false), (std::vector<int>{18}));
  EXPECT_EQ(tok->decode({18, 6, 7}), "abc\u2581a");  // pieces concatenated as they are
}

TEST(HfTokenizerJson, RejectsMalformedJson) {
  // Syntax errors and excess nesting name the line ("FILE:LINE"); a valid value of the wrong
  // kind names the file.
  expect_error("{not json", "tokenizer.json:1", "json");
  expect_error("[1, 2]", "tokenizer.json", "json");
  expect_error(std::string(200, '[') + std::string(200, ']'), "tokenizer.json:1", "json");
  expect_error(tiny_json().dump(), "tokenizer_config.json:1", "json", "{\"bos_token\": ");
}

struct Case {
  const char* field;
  std::function<void(json&)> mutate;
};

TEST(HfTokenizerJson, RejectsUnsupportedOrInconsistentFields) {
  const Case cases[] = {
      {"model", [](json& j) { j.erase("model"); }},
      {"model.type", [](json& j) { j["model"]["type"] = "Unigram"; }},
      {"model.type", [](json& j) { j["model"].erase("type"); }},
      {"model.vocab", [](json& j) { j["model"]["vocab"] = json::array(); }},
      {"model.vocab[\"zz\"]", [](json& j) { j["model"]["vocab"]["zz"] = 99; }},
      {"model.vocab[\"zz\"]", [](json& j) { j["model"]["vocab"]["zz"] = "20"; }},
      {"model.vocab[\"\"]", [](json& j) { j["model"]["vocab"][""] = 20; }},
      {"model.merges", [](json& j) { j["model"]["merges"] = "a b"; }},
      {"model.merges[1]", [](json& j) { j["model"]["merges"][1] = "he"; }},
      {"model.merges[1]", [](json& j) { j["model"]["merges"][1] = "h  e"; }},
      {"model.merges[0]", [](json& j) { j["model"]["merges"][0] = "q r"; }},
      {"model.merges[0]", [](json& j) { j["model"]["merges"][0] = "c a"; }},  // "ca" missing
      {"model.merges[0]", [](json& j) { j["model"]["merges"][0] = 5; }},
      {"model.unk_token", [](json& j) { j["model"]["unk_token"] = "<nope>"; }},
      {"model.dropout", [](json& j) { j["model"]["dropout"] = 0.1; }},
      {"model.continuing_subword_prefix",
       [](json& j) { j["model"]["continuing_subword_prefix"] = "##"; }},
      {"model.end_of_word_suffix", [](json& j) { j["model"]["end_of_word_suffix"] = "</w>"; }},
      {"model.ignore_merges", [](json& j) { j["model"]["ignore_merges"] = "yes"; }},
      {"model.fuse_unk", [](json& j) { j["model"]["fuse_unk"] = "yes"; }},
      {"pre_tokenizer.type", [](json& j) { j["pre_tokenizer"] = {{"type", "WhitespaceSplit"}}; }},
      {"pre_tokenizer.replacement", [](json& j) { j["pre_tokenizer"] = {{"type", "Metaspace"}}; }},
      {"pre_tokenizer.replacement", [](json& j) {
         j["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "__"}};
       }},
      {"pre_tokenizer.prepend_scheme", [](json& j) {
         j["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "_"}, {"prepend_scheme", "once"}};
       }},
      {"pre_tokenizer.pretokenizers[1]", [](json& j) {
         j["pre_tokenizer"] = json::parse(R"({"type": "Sequence", "pretokenizers": [
             {"type": "Digits"}, {"type": "Metaspace", "replacement": "_"}]})");
       }},
      {"pre_tokenizer.pretokenizers[0].behavior", [](json& j) {
         j["pre_tokenizer"] = json::parse(R"({"type": "Sequence", "pretokenizers": [
             {"type": "Split", "pattern": {"Regex": "a"}, "behavior": "Removed", "invert": false}]})");
       }},
      {"pre_tokenizer.invert", [](json& j) {
         j["pre_tokenizer"] = json::parse(
             R"({"type": "Split", "pattern": {"Regex": "a"}, "behavior": "Isolated", "invert": true})");
       }},
      {"pre_tokenizer.pattern", [](json& j) {  // does not compile: PCRE2's message
         j["pre_tokenizer"] = json::parse(
             R"({"type": "Split", "pattern": {"Regex": "(\\p{L"}, "behavior": "Isolated"})");
       }},
      {"pre_tokenizer.pattern", [](json& j) {
         j["pre_tokenizer"] = json::parse(R"({"type": "Split", "pattern": 7, "behavior": "Isolated"})");
       }},
      {"pre_tokenizer.add_prefix_space", [](json& j) {
         j["pre_tokenizer"] = json::parse(R"({"type": "ByteLevel", "add_prefix_space": true})");
       }},
      {"pre_tokenizer.pretokenizers[1]", [](json& j) {
         j["pre_tokenizer"] = json::parse(R"({"type": "Sequence", "pretokenizers": [
             {"type": "ByteLevel"}, {"type": "Digits"}]})");
       }},
      {"truncation", [](json& j) { j["truncation"] = {{"max_length", 5}}; }},
      {"padding", [](json& j) { j["padding"] = {{"pad_id", 0}}; }},
      {"post_processor.type", [](json& j) { j["post_processor"] = {{"type", "RobertaProcessing"}}; }},
      {"normalizer.type", [](json& j) { j["normalizer"] = {{"type", "NFKC"}}; }},
      {"normalizer.normalizers[0].type",
       [](json& j) { j["normalizer"]["normalizers"][0] = {{"type", "Lowercase"}}; }},
      {"normalizer.normalizers[0].pattern",
       [](json& j) { j["normalizer"]["normalizers"][0]["pattern"] = {{"Regex", " +"}}; }},
      {"normalizer.normalizers[1].prepend",
       [](json& j) { j["normalizer"]["normalizers"][1].erase("prepend"); }},
      {"normalizer.normalizers", [](json& j) { j["normalizer"].erase("normalizers"); }},
      {"decoder.decoders[0].type",
       [](json& j) { j["decoder"]["decoders"][0]["type"] = "WordPiece"; }},
      {"decoder.decoders[0].replacement",
       [](json& j) { j["decoder"]["decoders"][0]["type"] = "Metaspace"; }},
      {"decoder.decoders[3].stop", [](json& j) { j["decoder"]["decoders"][3]["stop"] = 1; }},
      {"decoder.decoders[3].start", [](json& j) { j["decoder"]["decoders"][3]["start"] = -1; }},
      {"decoder.decoders[3].content", [](json& j) { j["decoder"]["decoders"][3]["content"] = ""; }},
      {"added_tokens", [](json& j) { j["added_tokens"] = {{"id", 0}}; }},
      {"added_tokens[0].lstrip", [](json& j) { j["added_tokens"][0]["lstrip"] = true; }},
      {"added_tokens[0].single_word", [](json& j) { j["added_tokens"][0]["single_word"] = true; }},
      {"added_tokens[0].normalized", [](json& j) { j["added_tokens"][0]["normalized"] = 0; }},
      {"added_tokens[0].normalized", [](json& j) { j["added_tokens"][0].erase("normalized"); }},
      {"added_tokens[0].content", [](json& j) { j["added_tokens"][0]["content"] = "<UNK>"; }},
      {"added_tokens[0].content", [](json& j) { j["added_tokens"][0]["id"] = 500; }},  // dup
      {"added_tokens[0].id", [](json& j) { j["added_tokens"][0]["id"] = 1 << 20; }},
      {"added_tokens[0].id", [](json& j) { j["added_tokens"][0]["id"] = -1; }},
  };
  for (const Case& c : cases) {
    json j = tiny_json();
    c.mutate(j);
    SCOPED_TRACE(c.field);
    expect_error(j.dump(), "tokenizer.json", c.field);
  }
}

TEST(HfTokenizerJson, RejectsDuplicateVocabularyIds) {
  json j = tiny_json();
  j["model"]["vocab"]["zz"] = 3;  // the 21st entry reuses id 3 (and so id 20 is missing)
  try {
    parse(j.dump());
    ADD_FAILURE() << "accepted";
  } catch (const LoadError& e) {
    EXPECT_EQ(e.field().rfind("model.vocab[", 0), 0u) << e.what();  // whichever comes second
  }
}

TEST(HfTokenizerJson, RejectsBadSpecialTokensInConfig) {
  const std::string text = tiny_json().dump();
  expect_error(text, "tokenizer_config.json", "eos_token", R"({"bos_token": "<s>"})");
  expect_error(text, "tokenizer_config.json", "bos_token",
               R"({"bos_token": "<nope>", "eos_token": "</s>"})");
  expect_error(text, "tokenizer_config.json", "eos_token",
               R"({"bos_token": "<s>", "eos_token": "<eos>"})");
  expect_error(text, "tokenizer_config.json", "bos_token.content",
               R"({"bos_token": {"id": 1}, "eos_token": "</s>"})");
  expect_error(text, "tokenizer_config.json", "json", "[]");
}

TEST(HfTokenizerJson, LoadNeedsTokenizerConfigBesideIt) {
  std::filesystem::create_directories(::nanoserve::testing::temp_dir() + "nanoserve_lonely/");
  const std::string path = testing::write_temp_file("nanoserve_lonely/tokenizer.json",
                                                    std::vector<uint8_t>{'{', '}'});
  try {
    load_hf_tokenizer(path);
    ADD_FAILURE() << "accepted";
  } catch (const LoadError& e) {
    EXPECT_NE(e.file().find("tokenizer_config.json"), std::string::npos) << e.what();
    EXPECT_EQ(e.field(), "file");
  }
  EXPECT_THROW(load_hf_tokenizer("/nonexistent/tokenizer.json"), LoadError);
}

}  // namespace
}  // namespace nanoserve
