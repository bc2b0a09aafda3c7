#include <gtest/gtest.h>

#include "common/error.h"
#include "common/model_config.h"

namespace nanoserve {
namespace {

ModelConfig llama2_7b() {
  ModelConfig c;
  c.dim = 4096;
  c.hidden_dim = 11008;
  c.n_layers = 32;
  c.n_heads = 32;
  c.n_kv_heads = 32;
  c.head_dim = 128;
  c.vocab_size = 32000;
  c.max_seq_len = 4096;
  c.tied_classifier = false;
  return c;
}

TEST(ModelConfig, Llama2SevenBHasSixPointSevenBillionParameters) {
  // Published count for Llama-2-7B: 6,738,415,616 parameters.
  EXPECT_EQ(llama2_7b().param_count(), 6738415616LL);
}

TEST(ModelConfig, KvBytesPerTokenUsesKvHeadsNotModelWidth) {
  ModelConfig c = llama2_7b();
  // 2 (K and V) * 32 layers * 32 heads * 128 * 2 bytes = 512 KiB per token in fp16.
  EXPECT_EQ(c.kv_bytes_per_token(2), 524288);
  c.n_kv_heads = 8;  // GQA as in Llama-3-8B: four times less.
  EXPECT_EQ(c.kv_bytes_per_token(2), 131072);
}

TEST(ModelConfig, ValidateRejectsKvHeadsThatDoNotDivideHeads) {
  ModelConfig c = llama2_7b();
  c.n_kv_heads = 5;
  try {
    c.validate("x.bin");
    FAIL() << "expected LoadError";
  } catch (const LoadError& e) {
    EXPECT_EQ(e.field(), "n_kv_heads");
    EXPECT_NE(std::string(e.what()).find("x.bin"), std::string::npos);
  }
}

TEST(ModelConfig, ValidateRejectsAbsurdDimensions) {
  ModelConfig c = llama2_7b();
  c.n_layers = 1 << 30;
  EXPECT_THROW(c.validate("x.bin"), LoadError);
  c = llama2_7b();
  c.dim = -4;
  EXPECT_THROW(c.validate("x.bin"), LoadError);
  c = llama2_7b();
  c.head_dim = 7;
  EXPECT_THROW(c.validate("x.bin"), LoadError);
  EXPECT_NO_THROW(llama2_7b().validate("x.bin"));
}

}  // namespace
}  // namespace nanoserve
