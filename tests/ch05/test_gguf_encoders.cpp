// ggml's reference quantizers in nanoserve (common/loaders/gguf_quant_blocks.h): Q4_K and Q5_0
// round trips stay within their grid's step, and every encoder writes the same bytes as
// llama.cpp's own quantizer on the tensors it quantized (tests/data/gguf_llama_cpp/, made by
// llama_model_quantize from peers/write_synthetic_gguf.cpp's F32 model).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/error.h"
#include "common/loaders/ggml_types.h"
#include "common/loaders/gguf_file.h"
#include "common/loaders/gguf_more_blocks.h"
#include "common/loaders/gguf_quant_blocks.h"
#include "common/loaders/gguf_writer.h"
#include "common/loaders/half_float.h"
#include "common/loaders/mapped_file.h"
#include "common/loaders/synthetic_model.h"
#include "common/loaders/tensor_decode.h"
#include "quant_test_support.h"
#include "test_support.h"

namespace nanoserve {
namespace {

float fp16_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return fp16_to_fp32(h);
}

/// The 6-bit scale and min of sub-block `i` of a Q4_K block (as the header's diagram).
void scale_min(const uint8_t* scales, int i, int& sc, int& m) {
  if (i < 4) {
    sc = scales[i] & 63;
    m = scales[i + 4] & 63;
  } else {
    sc = (scales[i + 4] & 0x0F) | ((scales[i - 4] >> 6) << 4);
    m = (scales[i + 4] >> 4) | ((scales[i] >> 6) << 4);
  }
}

TEST(GgufEncoders, Q4_KRoundTripStaysWithinEachSubBlocksStep) {
  // Outliers every 37 elements make sub-blocks of very different ranges in one super-block,
  // which is what the 6-bit scales and mins relative to d and dmin have to absorb.
  const std::vector<float> w = testing::weights_with_outliers(9, 256 * 12, 37, 6.0f);
  const std::vector<uint8_t> enc = encode_q4_k(w);
  ASSERT_EQ(enc.size(), 12u * 144);
  std::vector<float> got(w.size());
  decode_q4_k(enc.data(), w.size(), got.data());
  double worst_step_ratio = 0;
  for (size_t b = 0; b < 12; ++b) {
    const uint8_t* block = enc.data() + b * 144;
    const float d = fp16_at(block), dmin = fp16_at(block + 2);
    for (int i = 0; i < 8; ++i) {
      int sc = 0, m = 0;
      scale_min(block + 4, i, sc, m);
      const float step = d * float(sc), lo = -dmin * float(m), hi = lo + 15 * step;
      const size_t at = b * 256 + size_t(i) * 32;
      const auto [mn, mx] = std::minmax_element(w.begin() + long(at), w.begin() + long(at + 32));
      const float range = std::max(*mx, 0.0f) - std::min(*mn, 0.0f);
      for (size_t j = at; j < at + 32; ++j) {
        // Inside the stored grid every element gets its nearest code: half a step.
        if (w[j] >= lo && w[j] <= hi) {
          EXPECT_LE(std::fabs(got[j] - w[j]), 0.5f * step * 1.0001f) << j;
        }
        // Anywhere, the error is about one step of a plain min/max 4-bit grid of the sub-block
        // at most: the least-squares grid may clip an extreme element (worst measured here:
        // 1.04 steps; llama.cpp's bytes are the same, see EncodersWriteLlamaCppsBytes).
        EXPECT_LE(std::fabs(got[j] - w[j]), 1.25f * range / 15) << j;
        worst_step_ratio = std::max(worst_step_ratio, double(std::fabs(got[j] - w[j]) / (range / 15)));
      }
    }
  }
  std::printf("[ q4_k     ] worst |x' - x| = %.3f of a min/max step\n", worst_step_ratio);
  EXPECT_THROW(encode_q4_k(std::vector<float>(255)), InvalidArgument);
  EXPECT_THROW(encode_q4_k(std::vector<float>(288)), InvalidArgument);
}

TEST(GgufEncoders, Q4_KOfAConstantOrZeroSubBlockIsExact) {
  std::vector<float> w(256, 0.0f);
  for (int j = 32; j < 64; ++j) w[size_t(j)] = -0.75f;  // a negative constant: all in the min
  std::vector<float> got(256);
  decode_q4_k(encode_q4_k(w).data(), 256, got.data());
  for (size_t j = 0; j < 256; ++j) EXPECT_NEAR(got[j], w[j], 1e-3f) << j;
}

TEST(GgufEncoders, Q5_0RoundTripStaysWithinHalfAStep) {
  const std::vector<float> w = testing::weights_with_outliers(5, 32 * 20, 37, 6.0f);
  std::vector<float> got(w.size());
  decode_q5_0(encode_q5_0(w).data(), w.size(), got.data());
  for (size_t b = 0; b < w.size() / 32; ++b) {
    float amax = 0;
    for (size_t j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(w[b * 32 + j]));
    for (size_t j = b * 32; j < b * 32 + 32; ++j) {
      // d = amax/16; the side without code 32 loses up to one step at +amax, as Q4_0.
      EXPECT_LE(std::fabs(got[j] - w[j]), amax / 16 * 1.001f) << j;
    }
  }
}

/// peers/write_synthetic_gguf.cpp's model: the F32 input llama.cpp quantized the fixtures from.
Model fixture_source_model() {
  ModelConfig c;
  c.name = "synthetic-k256";
  c.dim = 256;
  c.hidden_dim = 512;
  c.n_layers = 1;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 64;
  c.vocab_size = 512;  // stories260K's vocabulary
  c.max_seq_len = 256;
  c.tied_classifier = false;
  return make_synthetic_model(c, 2026);
}

class GgufEncodersVsLlamaCpp : public ::testing::TestWithParam<const char*> {};

// The encoders follow ggml's quantize_row_*_ref, which llama.cpp's quantizer runs without an
// importance matrix: the same fp32 input gives the same bytes, tensor for tensor.
TEST_P(GgufEncodersVsLlamaCpp, EncodersWriteLlamaCppsBytes) {
  const std::string path =
      std::string(NANOSERVE_TEST_DATA_DIR) + "/gguf_llama_cpp/synthetic-" + GetParam() + ".gguf";
  const MappedFile file(path);
  const GgufFile theirs = parse_gguf(file.data(), file.size(), path);
  const std::vector<uint8_t> f32 = save_gguf(fixture_source_model(), kGgmlTypeF32);
  const GgufFile source = parse_gguf(f32.data(), f32.size(), "source.gguf");
  int compared = 0;
  for (const GgufTensorInfo& t : theirs.tensors) {
    const uint32_t type = t.type->id;
    if (type != kGgmlTypeQ4_K && type != kGgmlTypeQ5_0 && type != kGgmlTypeQ4_0 &&
        type != kGgmlTypeQ8_0) {
      continue;
    }
    const GgufTensorInfo* s = source.find_tensor(t.name);
    ASSERT_NE(s, nullptr) << t.name;
    std::vector<float> values(s->n_elements);
    decode_f32(source.tensor_data(*s), s->n_elements, values.data());
    const std::vector<uint8_t> mine = encode_floats(values, type);
    const uint8_t* want = theirs.tensor_data(t);
    ASSERT_EQ(mine.size(), t.n_bytes) << t.name;
    size_t differing = 0;
    for (size_t i = 0; i < mine.size(); ++i) differing += mine[i] != want[i];
    EXPECT_EQ(differing, 0u) << t.name << " (" << t.type->name << "): " << differing << " of "
                             << mine.size() << " bytes differ from llama.cpp's";
    ++compared;
  }
  std::printf("[ llama.cpp] %s: %d tensors byte-identical\n", GetParam(), compared);
  EXPECT_GE(compared, 1) << path << " has no tensor of an encoded type";
}

INSTANTIATE_TEST_SUITE_P(Types, GgufEncodersVsLlamaCpp,
                         ::testing::Values("Q4_K_M", "Q5_0", "Q4_0", "Q8_0"));

}  // namespace
}  // namespace nanoserve
