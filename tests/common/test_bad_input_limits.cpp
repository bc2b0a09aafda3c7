// Bad input, classes 2 and 7 of issue 19: sizes from files are checked against stated limits
// as they are read, before anything is allocated or derived from them. A GGUF
// llama.context_length (HF max_position_embeddings, NSQM max_seq_len) of 2^21..2^24 made the
// programs allocate gigabytes; a GGUF with embedding length 0 was refused for "partial rotary
// embeddings"; an oracle backend reserved the whole context a file claims.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/generation/generate.h"
#include "common/loaders/ggml_types.h"
#include "common/loaders/gguf_loader.h"
#include "common/loaders/gguf_writer.h"
#include "common/loaders/hf_loader.h"
#include "common/model_config.h"
#include "common/oracle/oracle_decoder.h"
#include "common/quant/quant_io.h"
#include "common/quant/quantize_model.h"
#include "loader_test_files.h"

namespace nanoserve {
namespace {

using testing::expect_load_error;
using testing::find_gguf_string;
using testing::patch;

std::vector<uint8_t> gguf_with_u32(const std::string& key, uint32_t value) {
  std::vector<uint8_t> bytes = save_gguf(testing::micro_model(false), kGgmlTypeF32, nullptr);
  const size_t at = find_gguf_string(bytes, key);
  EXPECT_NE(at, std::string::npos) << key;
  patch<uint32_t>(bytes, at + key.size() + 4, value);  // after the key: u32 type, then value
  return bytes;
}

Model load_gguf_bytes(const std::vector<uint8_t>& bytes) {
  return load_gguf_from_memory(bytes.data(), bytes.size(), "m.gguf");
}

TEST(BadInputLimits, ContextLengthFromAFileIsCheckedAgainstTheStatedLimit) {
  EXPECT_EQ(ConfigLimits::kMaxSeqLen, 1 << 20);
  EXPECT_NO_THROW(load_gguf_bytes(gguf_with_u32("llama.context_length", 1 << 20)));
  for (uint32_t n : {1u << 21, 1u << 24}) {  // the range
    expect_load_error([&] { load_gguf_bytes(gguf_with_u32("llama.context_length", n)); }, "m.gguf",
                      "llama.context_length",
                      std::to_string(n) + " is outside [1, 1048576]");
  }
  Model hf = testing::micro_model(true);
  hf.config.rope_style = RopeStyle::kRotateHalf;
  const HfCheckpoint ck = save_hf(hf, "F32");
  nlohmann::json config = nlohmann::json::parse(ck.config_json);
  config["max_position_embeddings"] = 1 << 24;
  expect_load_error(
      [&] { load_hf_from_memory(config.dump(), ck.safetensors.data(), ck.safetensors.size(), "m"); },
      "m/config.json", "max_position_embeddings", "16777216 is outside [1, 1048576]");
  // NSQM: max_seq_len is the header's eighth int32, after magic and version.
  quant::QuantizeOptions q;
  q.scheme = {8, 0, true};  // INT8 per channel: fits the micro model's 8 columns
  std::vector<uint8_t> nsqm =
      quant::serialize_quantized_model(quant::quantize_model(testing::micro_model(true), {}, q));
  patch<int32_t>(nsqm, 8 + 7 * 4, 1 << 21);
  expect_load_error([&] { quant::load_quantized_model_from_memory(nsqm.data(), nsqm.size(), "q.nsqm"); },
                    "q.nsqm", "max_seq_len", "2097152 is outside [1, 1048576]");
}

TEST(BadInputLimits, AFieldIsNamedBeforeAnythingIsDerivedFromIt) {
  // The example: embedding length 0 was refused for "partial rotary embeddings",
  // because head_dim = 0 / n_heads reached the RoPE check first.
  const std::string what = expect_load_error(
      [] { load_gguf_bytes(gguf_with_u32("llama.embedding_length", 0)); }, "m.gguf",
      "llama.embedding_length", "0 is outside [1, 65536]");
  EXPECT_EQ(what.find("rotary"), std::string::npos) << what;
  expect_load_error([] { load_gguf_bytes(gguf_with_u32("llama.attention.head_count", 0)); },
                    "m.gguf", "llama.attention.head_count", "0 is outside [1, 1024]");
  expect_load_error([] { load_gguf_bytes(gguf_with_u32("llama.feed_forward_length", 1u << 31)); },
                    "m.gguf", "llama.feed_forward_length", "is outside [1, 262144]");
}

TEST(BadInputLimits, TheOracleBackendHoldsWhatTheRunNeedsNotTheContext) {
  Model m = testing::micro_model(true);
  m.config.max_seq_len = ConfigLimits::kMaxSeqLen;  // what a file may claim
  const oracle::OracleDecoder sized(m, 12);
  EXPECT_EQ(sized.max_seq_len(), 12);
  EXPECT_THROW(oracle::OracleDecoder(m, ConfigLimits::kMaxSeqLen + 1), InvalidArgument);
  oracle::OracleDecoder backend(m, 6);
  GenerateOptions opt;
  opt.max_new_tokens = 5;  // prompt 1 + 5 = 6 positions: stops on max_tokens, not the context
  const GenerateResult r = generate(backend, {1}, opt);
  EXPECT_EQ(r.generated(), 5);
  EXPECT_EQ(r.stop, StopReason::kMaxTokens);
}

}  // namespace
}  // namespace nanoserve
