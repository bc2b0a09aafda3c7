// Bad input, class 1 of issue 19: deeply nested JSON. A config.json, a safetensors header, a
// tokenizer.json or a trace line with a few hundred thousand nested `[` or `{` overflowed the
// stack (recursive dump() in an error message, recursive copies); every JSON reader now goes
// through parse_json_text, which bounds the nesting while parsing and names the file and line.
// Also the element bound that keeps a tokenizer.json claiming millions of tokens from building
// its whole tree first (class 2).
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/io/json_text.h"
#include "common/loaders/hf_loader.h"
#include "common/loaders/safetensors_file.h"
#include "common/tokenizer/hf_bpe_tokenizer.h"
#include "loader_test_files.h"
#include "test_support.h"

namespace nanoserve {
namespace {

using testing::expect_load_error;

std::string repo_path(const std::string& relative) {
  return std::string(NANOSERVE_TESTS_DIR) + "/../" + relative;
}

std::string deep_arrays(int n) { return std::string(size_t(n), '[') + std::string(size_t(n), ']'); }

std::string deep_objects(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += "{\"a\":";
  s += "1";
  return s + std::string(size_t(n), '}');
}

// The issue's size: a few hundred thousand levels.
constexpr int kIssueDepth = 300000;

TEST(BadInputJson, NestingIsBoundedAtTheStatedLimit) {
  EXPECT_NO_THROW(parse_json_text(deep_arrays(kMaxJsonDepth), "ok.json"));
  EXPECT_NO_THROW(parse_json_text(deep_objects(kMaxJsonDepth), "ok.json"));
  expect_load_error([] { parse_json_text(deep_arrays(kMaxJsonDepth + 1), "a.json"); }, "a.json:1",
                    "json", "nest deeper than 64 levels");
  expect_load_error([] { parse_json_text(deep_objects(kMaxJsonDepth + 1), "o.json"); }, "o.json:1",
                    "json", "nest deeper than 64 levels");
}

TEST(BadInputJson, HundredsOfThousandsOfLevelsAreRefusedNotAStackOverflow) {
  expect_load_error([] { parse_json_text(deep_arrays(kIssueDepth), "a.json"); }, "a.json:1",
                    "json", "nest deeper");
  expect_load_error([] { parse_json_text(deep_objects(kIssueDepth), "o.json"); }, "o.json:1",
                    "json", "nest deeper");
}

TEST(BadInputJson, TheErrorNamesTheLineWhereTheLimitWasCrossed) {
  // Brackets inside strings do not nest; the excess starts on line 4.
  const std::string text = "{\n\"s\": \"[[[[[[[[\",\n\"v\":\n" + deep_arrays(100) + "\n}";
  expect_load_error([&] { parse_json_text(text, "f.json"); }, "f.json:4", "json", "nest deeper");
  EXPECT_EQ(line_of_excess_nesting(text, 64), 4);
  EXPECT_EQ(line_of_excess_nesting("[\"]]]]\\\"[[[[\"]", 1), 0);  // escaped quote inside a string
  // A JSONL line passes its own number as the first line.
  expect_load_error([] { parse_json_text(deep_arrays(100), "t.jsonl", 7); }, "t.jsonl:7", "json",
                    "nest deeper");
  // Syntax errors name the line too.
  expect_load_error([] { parse_json_text("{\n\"a\": 1,\n}", "s.json"); }, "s.json:3", "json",
                    "not valid JSON");
}

TEST(BadInputJson, ElementCountIsBoundedWhileParsing) {
  JsonLimits limits;
  limits.max_elements = 10;
  limits.elements_reason = "for a test";
  EXPECT_NO_THROW(parse_json_text("[1,2,3,4,5,6,7,8,9]", "ok.json", 1, limits));  // 10 with the array
  expect_load_error([&] { parse_json_text("[1,2,3,4,5,6,7,8,9,10]", "n.json", 1, limits); },
                    "n.json", "json", "holds more than 10 values and keys (the limit for a test)");
}

TEST(BadInputJson, DeepConfigJsonIsRefused) {
  const HfCheckpoint g = [] {
    Model m = testing::micro_model(true);
    m.config.rope_style = RopeStyle::kRotateHalf;
    return save_hf(m, "F32");
  }();
  // model_type's value is quoted in the "not a Llama" message: that dump() recursed.
  const std::string config = "{\"model_type\": " + deep_arrays(kIssueDepth) + "}";
  expect_load_error([&] { load_hf_from_memory(config, g.safetensors.data(), g.safetensors.size(), "m"); },
                    "m/config.json:1", "json", "nest deeper");
}

TEST(BadInputJson, DeepSafetensorsHeaderIsRefused) {
  // A shape element is quoted in "expected a non-negative integer, got …": that dump() recursed.
  const std::string header = "{\"w\":{\"dtype\":\"F32\",\"shape\":" + deep_arrays(kIssueDepth) +
                             ",\"data_offsets\":[0,4]}}";
  std::vector<uint8_t> st(8);
  testing::patch<uint64_t>(st, 0, header.size());
  st.insert(st.end(), header.begin(), header.end());
  st.insert(st.end(), 4, 0);
  expect_load_error([&] { parse_safetensors(st.data(), st.size(), "w.safetensors"); },
                    "w.safetensors", "header", "w.safetensors:1: json: arrays and objects nest deeper");
}

TEST(BadInputJson, DeepTokenizerJsonIsRefused) {
  const std::string tok = "{\"model\": {\"type\": \"BPE\", \"dropout\": " + deep_arrays(kIssueDepth) +
                          ", \"vocab\": {\"a\": 0}, \"merges\": [], \"unk_token\": \"a\"}}";
  expect_load_error([&] { parse_hf_tokenizer(tok, "tokenizer.json", "{}", "tokenizer_config.json"); },
                    "tokenizer.json:1", "json", "nest deeper");
  const std::string config = "{\"bos_token\": " + deep_objects(kIssueDepth) + "}";
  const std::vector<uint8_t> tiny_bytes =
      testing::read_bytes(repo_path("fuzz/seeds/tokenizer_hf/tiny_tokenizer.json"));
  const std::string tiny(tiny_bytes.begin(), tiny_bytes.end());
  ASSERT_FALSE(tiny.empty());
  expect_load_error([&] { parse_hf_tokenizer(tiny, "tokenizer.json", config, "tokenizer_config.json"); },
                    "tokenizer_config.json:1", "json", "nest deeper");
}

TEST(BadInputJson, TheFuzzersNestingSeedsAreRefusedWithTheirLine) {
  for (const char* corpus : {"safetensors", "tokenizer_hf"}) {
    int seen = 0;
    for (const auto& entry : std::filesystem::directory_iterator(repo_path(std::string("fuzz/seeds/") + corpus))) {
      const std::string name = entry.path().filename().string();
      if (name.rfind("deep_", 0) != 0) continue;
      ++seen;
      const std::vector<uint8_t> bytes = testing::read_bytes(entry.path().string());
      try {
        if (std::string(corpus) == "tokenizer_hf") {
          parse_hf_tokenizer(std::string(bytes.begin(), bytes.end()), name, "{}", "config.json");
        } else {
          const auto* nul = static_cast<const uint8_t*>(std::memchr(bytes.data(), 0, bytes.size()));
          if (nul == nullptr) {
            parse_safetensors(bytes.data(), bytes.size(), name);
          } else {
            const std::string config(reinterpret_cast<const char*>(bytes.data()), size_t(nul - bytes.data()));
            load_hf_from_memory(config, nul + 1, bytes.size() - size_t(nul - bytes.data()) - 1, name);
          }
        }
        ADD_FAILURE() << name << " was accepted";
      } catch (const LoadError& e) {
        EXPECT_NE(std::string(e.what()).find("nest deeper than 64"), std::string::npos) << e.what();
      }
    }
    EXPECT_GT(seen, 0) << "no deep_* seed in fuzz/seeds/" << corpus;
  }
}

// A tokenizer.json claiming 2^22 tokens (the issue's example) reached 1.3 GB before any check:
// its whole tree was built, then its size compared. Now parsing stops at the element bound of
// kMaxHfVocab tokens, so this process's peak memory stays near the text's own size.
TEST(BadInputJson, HugeTokenizerVocabularyIsRefusedBeforeItsTreeIsBuilt) {
  std::string text = "{\"model\": {\"type\": \"BPE\", \"unk_token\": \"t0\", \"merges\": [], \"vocab\": {";
  constexpr int kClaimed = 1 << 22;
  text.reserve(size_t(kClaimed) * 22);
  char entry[32];
  for (int i = 0; i < kClaimed; ++i) {
    const int n = std::snprintf(entry, sizeof entry, ",\"t%d\":%d", i, i);
    text.append(entry + (i == 0 ? 1 : 0), size_t(n - (i == 0 ? 1 : 0)));
  }
  text += "}}}";
  expect_load_error([&] { parse_hf_tokenizer(text, "big.json", "{}", "tokenizer_config.json"); },
                    "big.json", "json", "for a tokenizer of at most 262144 tokens");
#ifndef NANOSERVE_ASAN  // AddressSanitizer's shadow memory and quarantine inflate the peak
  rusage usage{};
  ASSERT_EQ(getrusage(RUSAGE_SELF, &usage), 0);
  const double peak_mib = double(usage.ru_maxrss) / 1024;  // ru_maxrss is in KiB on Linux
  EXPECT_LT(peak_mib, 600) << "the parser built far more of the tree than the limit allows";
#endif
  // With a model of 16 embedding rows the bound is the model's, and tighter.
  expect_load_error([&] { parse_hf_tokenizer(text, "big.json", "{}", "c.json", 16); }, "big.json",
                    "json", "for a tokenizer of at most 16 tokens");
}

}  // namespace
}  // namespace nanoserve
