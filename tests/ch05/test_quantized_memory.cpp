// Weight bytes computed from a model's shape (engine/quantized_memory.h): by hand for
// Llama-2-7B, and equal to the bytes of a model really quantized and stored.
#include <gtest/gtest.h>

#include "chapters/ch05_quantization/quantized_memory.h"
#include "common/loaders/synthetic_model.h"
#include "common/model_bundle.h"
#include "common/quant/quantize_model.h"
#include "quant_test_support.h"

namespace nanoserve::ch05 {
namespace {

TEST(Ch05QuantizedMemory, Llama2_7BInt4Group128ByHand) {
  const ModelConfig c = synthetic_config("llama2-7b");
  // Per block: wq, wk, wv, wo are (4096, 4096): 4096 rows × 2048 code bytes + 4096 × 32 groups
  // × 2 scale bytes = 8,650,752 each. w1, w3 (11008, 4096) and w2 (4096, 11008) each hold
  // 11008·4096 weights: 22,544,384 code bytes + 704,512 scale bytes (w2: 4096 rows × 86 groups;
  // w1/w3: 11008 rows × 32 groups) = 23,248,896. Block: 4·8,650,752 + 3·23,248,896.
  const WeightBytes w = quantized_weight_bytes(c, {4, 128, true}, 2);
  EXPECT_EQ(w.linears, 32LL * (4 * 8650752LL + 3 * 23248896LL));
  EXPECT_DOUBLE_EQ(w.bits_per_linear_weight(), 4.125);  // 4 bits + a 16-bit scale per 128
  // Embedding and (untied) classifier 32000 × 4096 each, 65 norms of 4096, in fp16.
  EXPECT_EQ(w.rest, 2 * (2 * 32000LL * 4096 + 65LL * 4096));
  // Dense fp16: two bytes per parameter, 6,738,415,616 parameters (Llama-2-7B's published count).
  EXPECT_EQ(dense_weight_bytes(c, 2).total(), 2 * 6738415616LL);
  EXPECT_DOUBLE_EQ(dense_weight_bytes(c, 2).bits_per_linear_weight(), 16.0);
}

TEST(Ch05QuantizedMemory, AsymmetricAndActOrderAddZeroPointsAndGroupIndices) {
  // (3, 10) INT4 in groups of 4: 3 rows × 5 code bytes, 3 × 3 groups of 2-byte scales (+ zeros),
  // and 10 int32 group indices with act-order.
  EXPECT_EQ(quantized_linear_bytes(3, 10, {4, 4, true}), 15 + 18);
  EXPECT_EQ(quantized_linear_bytes(3, 10, {4, 4, false}), 15 + 18 + 18);
  EXPECT_EQ(quantized_linear_bytes(3, 10, {8, 0, false}, /*act_order=*/true), 30 + 6 + 6 + 40);
}

TEST(Ch05QuantizedMemory, MatchesTheBytesOfAModelQuantizedForReal) {
  const Model m = load_model_bundle("synthetic:tiny").model;
  for (const quant::QuantScheme s : {quant::QuantScheme{4, 32, false}, quant::QuantScheme{8, 0, true}}) {
    quant::QuantizeOptions o;
    o.method = quant::QuantMethod::kGptq;
    o.scheme = s;
    o.gptq.act_order = true;
    const quant::QuantizedModel q =
        quant::quantize_model(m, testing::random_sequences(3, 2, 16, m.config.vocab_size), o);
    const WeightBytes w = quantized_weight_bytes(m.config, s, 4, /*act_order=*/true);
    EXPECT_EQ(w.linears, q.linear_bytes()) << s.label();
    EXPECT_EQ(w.total(), q.weight_bytes()) << s.label();
  }
}

}  // namespace
}  // namespace nanoserve::ch05
