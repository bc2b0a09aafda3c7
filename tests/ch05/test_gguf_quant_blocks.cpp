// GGUF quantized block formats (common/loaders/gguf_quant_blocks.h): hand-built Q8_0, Q4_0
// and Q4_K blocks decode to the values the format defines; quantized GGUF files load through
// the normal loader (real stories260K included); bad block geometry is a clear LoadError.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "common/error.h"
#include "common/eval/perplexity.h"
#include "common/loaders/ggml_types.h"
#include "common/loaders/gguf_file.h"
#include "common/loaders/gguf_loader.h"
#include "common/loaders/gguf_quant_blocks.h"
#include "common/loaders/gguf_writer.h"
#include "common/loaders/mapped_file.h"
#include "common/loaders/tensor_decode.h"
#include "common/quant/calibration.h"
#include "common/tokenizer/load_tokenizer.h"
#include "quant_test_support.h"
#include "test_support.h"

namespace nanoserve {
namespace {

void put_fp16(std::vector<uint8_t>& b, size_t at, uint16_t h) { std::memcpy(&b[at], &h, 2); }

TEST(GgufQuantBlocks, Q8_0IsScaleTimesSignedByte) {
  std::vector<uint8_t> block(34, 0);
  put_fp16(block, 0, 0x3800);  // d = 0.5
  const int8_t q[5] = {-128, -1, 0, 1, 127};
  for (int j = 0; j < 32; ++j) block[size_t(2 + j)] = uint8_t(j < 5 ? q[j] : int8_t(j));
  std::vector<float> x(32);
  decode_q8_0(block.data(), 32, x.data());
  EXPECT_EQ(x[0], -64.0f);
  EXPECT_EQ(x[1], -0.5f);
  EXPECT_EQ(x[2], 0.0f);
  EXPECT_EQ(x[3], 0.5f);
  EXPECT_EQ(x[4], 63.5f);
  EXPECT_EQ(x[31], 15.5f);
}

TEST(GgufQuantBlocks, Q4_0LowNibblesAreTheFirstHalfHighNibblesTheSecond) {
  std::vector<uint8_t> block(18, 0);
  put_fp16(block, 0, 0xB400);  // d = -0.25 (ggml's d = max / -8 is often negative)
  for (int j = 0; j < 16; ++j) block[size_t(2 + j)] = uint8_t(j | ((15 - j) << 4));
  std::vector<float> x(32);
  decode_q4_0(block.data(), 32, x.data());
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(x[size_t(j)], -0.25f * float(j - 8)) << j;            // low nibble j
    EXPECT_EQ(x[size_t(j + 16)], -0.25f * float(7 - j)) << j + 16;  // high nibble 15 - j
  }
}

TEST(GgufQuantBlocks, Q4_KUsesSixBitSubBlockScalesAndMins) {
  // Sub-block scales and mins chosen to use the high bits that i >= 4 stores separately.
  const int sc[8] = {1, 2, 3, 4, 17, 33, 50, 63};
  const int mn[8] = {0, 1, 2, 3, 20, 40, 60, 5};
  std::vector<uint8_t> block(144, 0);
  put_fp16(block, 0, 0x3C00);  // d = 1
  put_fp16(block, 2, 0x3800);  // dmin = 0.5
  uint8_t* scales = &block[4];
  for (int i = 0; i < 4; ++i) {
    scales[i] = uint8_t(sc[i] | ((sc[i + 4] >> 4) << 6));       // 6 low bits + 2 high of sc[i+4]
    scales[i + 4] = uint8_t(mn[i] | ((mn[i + 4] >> 4) << 6));   // same for the mins
    scales[i + 8] = uint8_t((sc[i + 4] & 0x0F) | ((mn[i + 4] & 0x0F) << 4));
  }
  for (int k = 0; k < 4; ++k) {
    for (int l = 0; l < 32; ++l) block[size_t(16 + 32 * k + l)] = uint8_t(((l + k) % 16) | (((3 * l + k) % 16) << 4));
  }
  std::vector<float> x(256);
  decode_q4_k(block.data(), 256, x.data());
  for (int k = 0; k < 4; ++k) {
    for (int l = 0; l < 32; ++l) {
      EXPECT_EQ(x[size_t(64 * k + l)], float(sc[2 * k] * ((l + k) % 16)) - 0.5f * float(mn[2 * k]));
      EXPECT_EQ(x[size_t(64 * k + 32 + l)],
                float(sc[2 * k + 1] * ((3 * l + k) % 16)) - 0.5f * float(mn[2 * k + 1]));
    }
  }
}

TEST(GgufQuantBlocks, ReferenceEncodersStayWithinTheirStep) {
  const std::vector<float> w = testing::weights_with_outliers(5, 32 * 20, 37, 6.0f);
  std::vector<float> q8(w.size()), q4(w.size());
  decode_q8_0(encode_q8_0(w).data(), w.size(), q8.data());
  decode_q4_0(encode_q4_0(w).data(), w.size(), q4.data());
  for (size_t b = 0; b < w.size() / 32; ++b) {
    float amax = 0;
    for (size_t j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(w[b * 32 + j]));
    for (size_t j = 0; j < 32; ++j) {
      const size_t i = b * 32 + j;
      EXPECT_LE(std::fabs(q8[i] - w[i]), 0.5f * amax / 127 * 1.001f) << i;
      // Q4_0: half a step of d = amax/8, except +amax on the side without code 16: one step.
      EXPECT_LE(std::fabs(q4[i] - w[i]), amax / 8 * 1.001f) << i;
    }
  }
  EXPECT_THROW(encode_q8_0(std::vector<float>(31)), InvalidArgument);
}

/// `f32_gguf` rewritten with every 2-D tensor whose rows are whole 32-blocks stored as `type`
/// (Q8_0 or Q4_0); other tensors (norms of odd width, ffn_down of stories260K) stay F32.
std::vector<uint8_t> requantize(const std::vector<uint8_t>& f32_gguf, uint32_t type, int* converted) {
  const GgufFile f = parse_gguf(f32_gguf.data(), f32_gguf.size(), "in.gguf");
  GgufWriter w;
  for (const auto& [key, value] : f.metadata.entries()) w.add_metadata(key, value);
  *converted = 0;
  for (const GgufTensorInfo& t : f.tensors) {
    const uint8_t* p = f.tensor_data(t);
    if (t.dims.size() == 2 && t.dims[0] % 32 == 0 && t.type->id == kGgmlTypeF32) {
      std::vector<float> values(t.n_elements);
      decode_f32(p, t.n_elements, values.data());
      w.add_tensor(t.name, t.dims, type, type == kGgmlTypeQ8_0 ? encode_q8_0(values) : encode_q4_0(values));
      ++*converted;
    } else {
      w.add_tensor(t.name, t.dims, t.type->id, std::vector<uint8_t>(p, p + t.n_bytes));
    }
  }
  return w.serialize();
}

Model micro32_model() {
  ModelConfig c;
  c.name = "micro32";
  c.dim = 32;
  c.hidden_dim = 64;
  c.n_layers = 1;
  c.n_heads = 2;
  c.n_kv_heads = 1;
  c.head_dim = 16;
  c.vocab_size = 40;
  c.max_seq_len = 16;
  c.tied_classifier = false;
  return make_synthetic_model(c, 3);
}

TEST(GgufQuantBlocks, QuantizedGgufLoadsEveryTensorThroughItsDecoder) {
  const Model m = micro32_model();
  for (uint32_t type : {kGgmlTypeQ8_0, kGgmlTypeQ4_0}) {
    int converted = 0;
    const std::vector<uint8_t> bytes = requantize(save_gguf(m, kGgmlTypeF32), type, &converted);
    EXPECT_EQ(converted, 9);  // embedding, classifier and the seven linears
    const Model q = load_gguf_from_memory(bytes.data(), bytes.size(), "q.gguf");
    auto expect_decoded = [&](const std::vector<float>& got, const std::vector<float>& orig) {
      std::vector<float> want(orig.size());
      const std::vector<uint8_t> enc = type == kGgmlTypeQ8_0 ? encode_q8_0(orig) : encode_q4_0(orig);
      (type == kGgmlTypeQ8_0 ? decode_q8_0 : decode_q4_0)(enc.data(), orig.size(), want.data());
      EXPECT_EQ(got, want);
      EXPECT_NE(got, orig);
    };
    expect_decoded(q.token_embedding, m.token_embedding);
    expect_decoded(q.classifier, m.classifier);
    expect_decoded(q.layers[0].wq, m.layers[0].wq);
    expect_decoded(q.layers[0].w2, m.layers[0].w2);
    EXPECT_EQ(q.layers[0].attn_norm, m.layers[0].attn_norm);  // 1-D stays F32
  }
}

TEST(GgufQuantBlocks, RejectsRowsThatAreNotWholeBlocksAndRangesOutsideTheFile) {
  auto expect_error = [](const std::vector<uint8_t>& bytes, const std::string& what) {
    try {
      parse_gguf(bytes.data(), bytes.size(), "bad.gguf");
      ADD_FAILURE() << "no error, expected: " << what;
    } catch (const LoadError& e) {
      EXPECT_EQ(e.field(), "w");
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  GgufWriter a;
  a.add_tensor("w", {48, 2}, kGgmlTypeQ4_0, std::vector<uint8_t>(2 * 2 * 18));
  expect_error(a.serialize(), "row length 48 is not a multiple of the Q4_0 block size 32");
  GgufWriter b;
  b.add_tensor("w", {128, 1}, kGgmlTypeQ4_K, std::vector<uint8_t>(144));
  expect_error(b.serialize(), "row length 128 is not a multiple of the Q4_K block size 256");
  GgufWriter c;  // 2 rows of 64 need 4 Q8_0 blocks = 136 bytes; the file holds 34
  c.add_tensor("w", {64, 2}, kGgmlTypeQ8_0, std::vector<uint8_t>(34));
  expect_error(c.serialize(1), "needs 136 bytes");
}

TEST(GgufQuantBlocks, Stories260KInQ8_0KeepsItsPerplexity) {
  NANOSERVE_REQUIRE_DATA(path, "stories260K.gguf");
  NANOSERVE_REQUIRE_DATA(text_path, "tinystories_valid_sample.txt");
  NANOSERVE_REQUIRE_DATA(tok_path, "tok512.bin");
  const MappedFile file(path);
  const std::vector<uint8_t> f32(file.data(), file.data() + file.size());
  int converted = 0;
  const std::vector<uint8_t> q8 = requantize(f32, kGgmlTypeQ8_0, &converted);
  // Embedding, its stored copy output.weight, 6 linears per block (ffn_down rows are 172 wide).
  EXPECT_EQ(converted, 2 + 5 * 6);
  const Model fp = load_gguf_from_memory(f32.data(), f32.size(), "f32.gguf");
  const Model q = load_gguf_from_memory(q8.data(), q8.size(), "q8.gguf");
  const std::unique_ptr<Tokenizer> tok = load_tokenizer(tok_path, 512);
  // Evaluation slice, first 10 documents, for speed.
  const std::string text = quant::select_documents(eval::read_text_file(text_path), {0, 10});
  eval::EvalOptions o;
  const double ppl_fp = eval::evaluate_text(text, *tok, eval::oracle_logits(fp), o).perplexity;
  const double ppl_q8 = eval::evaluate_text(text, *tok, eval::oracle_logits(q), o).perplexity;
  EXPECT_NEAR(ppl_q8 / ppl_fp, 1.0, 0.005) << "fp32 " << ppl_fp << ", Q8_0 " << ppl_q8;
}

}  // namespace
}  // namespace nanoserve
