#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "common/loaders/llama2c_loader.h"
#include "common/loaders/synthetic_model.h"
#include "common/model_bundle.h"
#include "common/tokenizer/byte_tokenizer.h"
#include "test_support.h"

namespace nanoserve {
namespace {

TEST(ModelBundle, SyntheticModelsGetTheByteTokenizer) {
  const ModelBundle b = load_model_bundle("synthetic:tiny");
  EXPECT_EQ(b.tokenizer_path, "(bytes)");
  EXPECT_EQ(b.tokenizer->encode("Hi", true, false), (std::vector<int>{1, 3 + 'H', 3 + 'i'}));
  EXPECT_EQ(b.tokenizer->decode({1, 3 + 'H', 3 + 'i', 2}), "Hi");
}

TEST(ModelBundle, ByteTokenizerRejectsTooSmallVocabulariesAndUnknownIds) {
  EXPECT_THROW(ByteTokenizer(258), InvalidArgument);
  const ByteTokenizer t(300);
  EXPECT_EQ(t.decode_token(1, 299), "");
  EXPECT_THROW(t.decode_token(1, 300), InvalidArgument);
}

TEST(ModelBundle, FindsEachRealModelsTokenizer) {
  NANOSERVE_REQUIRE_DATA(bin, "stories260K.bin");
  NANOSERVE_REQUIRE_DATA(gguf, "stories260K.gguf");
  NANOSERVE_REQUIRE_DATA(hf, "tinystories-656k");
  EXPECT_NE(load_model_bundle(bin).tokenizer_path.find("tok512.bin"), std::string::npos);
  EXPECT_EQ(load_model_bundle(gguf).tokenizer_path, "(embedded)");
  EXPECT_NE(load_model_bundle(hf).tokenizer_path.find("tokenizer.json"), std::string::npos);
}

TEST(ModelBundle, ALlama2cModelWithoutTokenizerIsAClearError) {
  // A model alone in a directory, with a vocabulary size no tokenizer file is named after.
  ModelConfig c = synthetic_config("tiny");
  c.vocab_size = 300;
  const Model m = make_synthetic_model(c, 1);
  const std::string dir = ::nanoserve::testing::temp_dir() + "bundle_lonely";
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/model.bin";
  const std::vector<uint8_t> bytes = save_llama2c(m);
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                              std::streamsize(bytes.size()));
  try {
    load_model_bundle(path);
    FAIL() << "expected LoadError";
  } catch (const LoadError& e) {
    EXPECT_NE(std::string(e.what()).find("tok300.bin"), std::string::npos) << e.what();
  }
}

TEST(ModelBundle, ATokenizerLargerThanTheModelIsRejected) {
  NANOSERVE_REQUIRE_DATA(tok, "tokenizer.bin");  // 32000 tokens
  EXPECT_THROW(load_model_bundle("synthetic:tiny", tok), LoadError);  // vocab 512
}

}  // namespace
}  // namespace nanoserve
