// load_tokenizer: the format follows the file name, and the vocabulary must fit the model.

#include <gtest/gtest.h>

#include <cstring>

#include "common/error.h"
#include "common/tokenizer/hf_bpe_tokenizer.h"
#include "common/tokenizer/llama_tokenizer.h"
#include "common/tokenizer/load_tokenizer.h"
#include "test_support.h"
#include "tokenizer_test_support.h"

namespace nanoserve {
namespace {

// A minimal llama2.c tokenizer file: max_token_length 5, then <unk>, <s>, </s>, " " (score 0).
std::vector<uint8_t> tiny_llama2c_file() {
  std::vector<uint8_t> out(4);
  const int32_t max_len = 5;
  std::memcpy(out.data(), &max_len, 4);
  for (const std::string piece : {"<unk>", "<s>", "</s>", " "}) {
    const float score = 0;
    const int32_t len = static_cast<int32_t>(piece.size());
    out.resize(out.size() + 8);
    std::memcpy(out.data() + out.size() - 8, &score, 4);
    std::memcpy(out.data() + out.size() - 4, &len, 4);
    out.insert(out.end(), piece.begin(), piece.end());
  }
  return out;
}

std::string field_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const LoadError& e) {
    return e.field();
  }
  return "(no LoadError)";
}

TEST(LoadTokenizer, DispatchesOnTheFileName) {
  const std::string bin = testing::write_temp_file("nanoserve_tiny_tok.bin", tiny_llama2c_file());
  EXPECT_NE(dynamic_cast<LlamaTokenizer*>(load_tokenizer(bin, 4).get()), nullptr);
  EXPECT_NE(dynamic_cast<LlamaTokenizer*>(load_tokenizer(bin, 0).get()), nullptr);
  const std::string json = testing::fixture_path("hf_tiny/tokenizer.json");
  EXPECT_NE(dynamic_cast<HfBpeTokenizer*>(load_tokenizer(json, 20).get()), nullptr);
  EXPECT_EQ(field_of([&] { load_tokenizer("/nonexistent/stories260K.gguf", 512); }), "format");
  EXPECT_EQ(field_of([&] { load_tokenizer("/nonexistent/tok.bin", 512); }), "file");
  EXPECT_THROW(load_tokenizer(bin, -1), InvalidArgument);
}

TEST(LoadTokenizer, VocabularyMustFitTheModel) {
  const std::string bin = testing::write_temp_file("nanoserve_tiny_tok.bin", tiny_llama2c_file());
  EXPECT_EQ(field_of([&] { load_tokenizer(bin, 5); }), "vocab_size");  // exact count needed
  const std::string json = testing::fixture_path("hf_tiny/tokenizer.json");
  EXPECT_EQ(load_tokenizer(json, 64)->vocab_size(), 20);  // padded embedding table: fine
  EXPECT_EQ(field_of([&] { load_tokenizer(json, 19); }), "model.vocab");
}

TEST(LoadTokenizer, RealTokenizersLoadWithTheirModelsVocabSize) {
  for (const auto& [name, size] : {std::pair<std::string, int>{"tok512.bin", 512},
                                   std::pair<std::string, int>{"tokenizer.bin", 32000},
                                   std::pair<std::string, int>{"tinystories-656k/tokenizer.json",
                                                               2048}}) {
    NANOSERVE_REQUIRE_DATA(path, name);
    const auto tok = load_tokenizer(path, size);
    EXPECT_EQ(tok->vocab_size(), size) << name;
    EXPECT_EQ(tok->bos_id(), 1) << name;  // <s> / <|start_story|>
    EXPECT_EQ(tok->eos_id(), 2) << name;  // </s> / <|end_story|>
  }
}

}  // namespace
}  // namespace nanoserve
