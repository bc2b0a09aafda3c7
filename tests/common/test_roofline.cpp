// The roofline model (common/roofline/): the device table and the per-pass cost, checked
// against values computed by hand from the model's shape (docs/roofline.md, worked example).
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "common/error.h"
#include "common/loaders/synthetic_model.h"
#include "common/roofline/device.h"
#include "common/roofline/pass_cost.h"

namespace nanoserve::roofline {
namespace {

// Llama-2-7B's published shape (common/loaders/synthetic_model.h).
ModelConfig llama2_7b() { return synthetic_config("synthetic:llama2-7b"); }

TEST(RooflineDevices, EveryDeviceHasAUniqueKeyASourceAndPositiveFigures) {
  std::set<std::string> keys;
  for (const Device& d : devices()) {
    EXPECT_TRUE(keys.insert(d.key).second) << d.key;
    EXPECT_GT(std::string(d.source).size(), 10u) << d.key;
    EXPECT_GT(d.memory_bandwidth, 1e11) << d.key;
    // Dense tensor-core fp16 is several times the fp32 CUDA-core rate on every part.
    EXPECT_GT(d.tensor_flops, 1.9 * d.fp32_flops) << d.key;
    EXPECT_GT(d.sm_count, 0) << d.key;
    EXPECT_GT(d.l2_bytes, 0) << d.key;
    EXPECT_GT(d.memory_bytes, d.l2_bytes) << d.key;
  }
  EXPECT_EQ(device_keys(), "a100, h100, h200, l4, rtx4090");
  EXPECT_DOUBLE_EQ(find_device("h200").memory_bandwidth, 4.8e12);
  EXPECT_DOUBLE_EQ(find_device("h100").tensor_flops, 989.5e12);  // dense: half of 1,979 sparse
}

TEST(RooflineDevices, UnknownDeviceIsRefusedWithTheKnownNames) {
  try {
    find_device("h300");
    FAIL() << "h300 was accepted";
  } catch (const InvalidArgument& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("'h300'"), std::string::npos) << m;
    EXPECT_NE(m.find("a100, h100, h200, l4, rtx4090"), std::string::npos) << m;
  }
}

TEST(RooflinePass, Llama2SevenBDecodeOnH200StreamsThirteenGigabytesInAboutTwoPointEightMs) {
  const PassCost cost = pass_cost(llama2_7b(), PassShape::decode(1, 1023), Precision::dense(2),
                                  find_device("h200"), Assumptions::ideal());
  // By hand: per layer 4·4096² + 3·4096·11008 = 202,375,168 linear weights, × 32 layers × 2 B
  // = 12,952,010,752; classifier 32000·4096·2 = 262,144,000; 65 norm vectors 65·4096·2 =
  // 532,480; one embedding row 4096·2 = 8,192.
  EXPECT_DOUBLE_EQ(cost.weight_bytes(), 12952010752.0 + 262144000.0 + 532480.0 + 8192.0);
  // KV: 1,024 positions × K and V × 4096 × 2 B × 32 layers read; one position written.
  EXPECT_DOUBLE_EQ(cost.kernel("attention").kv_bytes, 1024.0 * 2 * 4096 * 2 * 32);
  EXPECT_DOUBLE_EQ(cost.kernel("rope_kv_append").kv_bytes, 1.0 * 2 * 4096 * 2 * 32);
  // Batch 1 decode is bandwidth-bound in every kernel, so the time is bytes / bandwidth.
  for (const KernelCost& k : cost.kernels) EXPECT_TRUE(k.memory_bound()) << k.name;
  EXPECT_NEAR(cost.time_s(), cost.bytes() / 4.8e12, 1e-12);
  EXPECT_GT(cost.time_s(), 2.75e-3);  // 13.2 GB / 4.8 TB/s = 2.753 ms, plus KV and activations
  EXPECT_LT(cost.time_s(), 2.90e-3);
}

TEST(RooflinePass, LongPrefillIsComputeBoundInTheGemms) {
  const ModelConfig c = llama2_7b();
  const PassCost cost = pass_cost(c, PassShape::prefill(2048), Precision::dense(2),
                                  find_device("h200"), Assumptions::ideal());
  const KernelCost& qkv = cost.kernel("qkv_proj");
  EXPECT_DOUBLE_EQ(qkv.flops, 32.0 * 2 * 2048 * 4096 * (3 * 4096));
  EXPECT_FALSE(qkv.memory_bound());
  EXPECT_DOUBLE_EQ(qkv.compute_s, qkv.flops / 989.5e12);
  // Causal attention: row p attends to p + 1 keys; Σ_{p<2048} (p+1) = 2048·2049/2.
  EXPECT_DOUBLE_EQ(cost.kernel("attention").flops, 32.0 * 4 * 4096 * (2048.0 * 2049 / 2));
  // Only the last row reaches the classifier.
  EXPECT_DOUBLE_EQ(cost.kernel("lm_head").flops, 2.0 * 4096 * 32000);
}

TEST(RooflinePass, BatchingDecodesAmortizesTheWeights) {
  const ModelConfig c = llama2_7b();
  const Device& h200 = find_device("h200");
  const double one = pass_cost(c, PassShape::decode(1, 128), Precision::dense(2), h200).time_s();
  const double many = pass_cost(c, PassShape::decode(32, 128), Precision::dense(2), h200).time_s();
  EXPECT_LT(many, 1.5 * one);  // 32 tokens for less than 1.5 × the price of one
  EXPECT_GT(many, one);        // but not free: KV and activations grow with the batch
}

TEST(RooflinePass, QuantizedLinearBytesCountCodesScalesAndZeroPoints) {
  const Precision fp16 = Precision::dense(2);
  EXPECT_DOUBLE_EQ(fp16.linear_bytes(4096, 4096), 4096.0 * 4096 * 2);
  // INT4 g128: half a byte per weight + one fp16 scale per 128 columns of every row.
  const Precision w4 = Precision::weight_only(4, 128, false, fp16);
  EXPECT_DOUBLE_EQ(w4.linear_bytes(4096, 4096), 4096.0 * 4096 / 2 + 4096.0 * 32 * 2);
  const Precision w4a = Precision::weight_only(4, 128, true, fp16);
  EXPECT_DOUBLE_EQ(w4a.linear_bytes(4096, 4096), 4096.0 * 4096 / 2 + 4096.0 * 32 * 4);
  // A last, narrower group still has its scale: 11008 = 86·128 exactly; 172 = 5·32 + 12.
  const Precision w8 = Precision::weight_only(8, 32, false, fp16);
  EXPECT_DOUBLE_EQ(w8.linear_bytes(10, 172), 10.0 * 172 + 10.0 * 6 * 2);
  const Precision ch = Precision::weight_only(8, 0, false, fp16);  // one scale per row
  EXPECT_DOUBLE_EQ(ch.linear_bytes(10, 172), 10.0 * 172 + 10.0 * 2);
  EXPECT_EQ(w4.label(), "int4-g128 (fp16 act)");
  EXPECT_THROW(Precision::weight_only(3, 128, false, fp16), InvalidArgument);
}

TEST(RooflinePass, Int4DecodeOfASevenBModelStreamsAQuarterOfTheBytesButLaunchesDoNotShrink) {
  const ModelConfig c = llama2_7b();
  const Device& h200 = find_device("h200");
  const Precision fp16 = Precision::dense(2);
  const Precision w4 = Precision::weight_only(4, 128, false, fp16);
  const PassShape s = PassShape::decode(1, 256);
  const auto ratio = [&](const Assumptions& a) {
    return pass_cost(c, s, fp16, h200, a).time_s() / pass_cost(c, s, w4, h200, a).time_s();
  };
  // Ideal machine: the time ratio is the bytes ratio. By hand: fp16 13.215 GB of weights +
  // 0.135 GB of KV; INT4 g128 linears 3.339 GB + fp16 classifier 0.262 GB + the same KV:
  // 13.35 / 3.74 = 3.57.
  EXPECT_NEAR(ratio(Assumptions::ideal()), 3.57, 0.02);
  // Eager, 260 launches of 4 µs (1.04 ms) do not shrink with the weights; one graph does better.
  Assumptions graph;
  graph.cuda_graph = true;
  const double eager = ratio(Assumptions{}), graphed = ratio(graph);
  EXPECT_LT(eager, graphed);
  EXPECT_LT(graphed, ratio(Assumptions::ideal()));
  EXPECT_GT(eager, 2.0);
}

TEST(RooflinePass, EagerLaunchesCostPerKernelAndAGraphCostsOneLaunch) {
  const ModelConfig c = llama2_7b();
  const Device& l4 = find_device("l4");
  const PassShape s = PassShape::decode(4, 64);
  Assumptions no_launch;
  no_launch.launch_s = 0;
  const PassCost base = pass_cost(c, s, Precision::dense(2), l4, no_launch);
  EXPECT_EQ(base.launches(), 4 + 8 * 32);
  const PassCost eager = pass_cost(c, s, Precision::dense(2), l4);
  EXPECT_NEAR(eager.time_s() - base.time_s(), 260 * kKernelLaunchSeconds, 1e-12);
  Assumptions graph;
  graph.cuda_graph = true;
  const PassCost g = pass_cost(c, s, Precision::dense(2), l4, graph);
  EXPECT_NEAR(g.time_s() - base.time_s(), kGraphLaunchSeconds + 260 * kGraphNodeSeconds, 1e-12);
}

TEST(RooflinePass, Fp32RunsOnCudaCoresAndMovesTwiceTheBytes) {
  const ModelConfig c = llama2_7b();
  const Device& a100 = find_device("a100");
  const PassCost f32 = pass_cost(c, PassShape::prefill(512), Precision::dense(4), a100, Assumptions::ideal());
  const PassCost f16 = pass_cost(c, PassShape::prefill(512), Precision::dense(2), a100, Assumptions::ideal());
  EXPECT_DOUBLE_EQ(f32.weight_bytes(), 2 * f16.weight_bytes());
  EXPECT_DOUBLE_EQ(f32.kernel("down_proj").compute_s, f32.kernel("down_proj").flops / 19.5e12);
  EXPECT_DOUBLE_EQ(f16.kernel("down_proj").compute_s, f16.kernel("down_proj").flops / 312e12);
}

TEST(RooflinePass, GroupedQueryAttentionReadsFewerKvBytes) {
  ModelConfig c = llama2_7b();
  const Device& h100 = find_device("h100");
  const double mha = pass_cost(c, PassShape::decode(8, 2047), Precision::dense(2), h100)
                         .kernel("attention").kv_bytes;
  c.n_kv_heads = 8;
  const double gqa = pass_cost(c, PassShape::decode(8, 2047), Precision::dense(2), h100)
                         .kernel("attention").kv_bytes;
  EXPECT_DOUBLE_EQ(mha, 4 * gqa);
  EXPECT_DOUBLE_EQ(gqa, 8.0 * 2048 * 2 * 1024 * 2 * 32);
}

TEST(RooflinePass, MixedBatchChargesEachChunkItsOwnContext) {
  const ModelConfig c = llama2_7b();
  PassShape s;
  s.chunks = {{0, 16, false}, {100, 1, true}};  // a prefill chunk that stops short + a decode
  const PassCost cost = pass_cost(c, s, Precision::dense(2), find_device("h200"));
  EXPECT_DOUBLE_EQ(cost.kernel("attention").kv_bytes, (16.0 + 101.0) * 2 * 4096 * 2 * 32);
  EXPECT_DOUBLE_EQ(cost.kernel("lm_head").flops, 2.0 * 4096 * 32000);  // one sampled row
  EXPECT_NE(format_breakdown(cost).find("gate_up_proj"), std::string::npos);
}

// The fusions (kernels/README.md, "Fusions") change no weight byte and no FLOP: they remove
// activation traffic — by hand, per layer and row, 2 extra reads of xn by the separate k and v
// projections, k read and written once more by RoPE in place before the append reads it, xn read
// once more by the separate up projection, gate and up written and read back by SwiGLU:
// a · (3·dim + 2·kv_dim + 4·hidden) bytes — and 5 launches per layer.
TEST(RooflinePass, TheFusedKernelSetMovesFewerActivationBytesInFewerLaunches) {
  const ModelConfig c = llama2_7b();
  const Device& h200 = find_device("h200");
  Assumptions unfused;
  unfused.fused = false;
  for (const PassShape& s : {PassShape::decode(1, 1023), PassShape::prefill(512)}) {
    const PassCost f = pass_cost(c, s, Precision::dense(2), h200);
    const PassCost u = pass_cost(c, s, Precision::dense(2), h200, unfused);
    const double T = double(s.rows());
    EXPECT_DOUBLE_EQ(u.weight_bytes(), f.weight_bytes());
    EXPECT_DOUBLE_EQ(u.flops(), f.flops());
    EXPECT_DOUBLE_EQ(u.bytes() - f.bytes(), 32 * T * 2 * (3 * 4096 + 2 * 4096 + 4 * 11008.0));
    EXPECT_EQ(f.launches(), 4 + 8 * 32);
    EXPECT_EQ(u.launches(), 4 + 13 * 32);
    EXPECT_GT(u.time_s(), f.time_s());
    EXPECT_DOUBLE_EQ(u.kernel("kv_append").kv_bytes, f.kernel("rope_kv_append").kv_bytes);
  }
  EXPECT_THROW(pass_cost(c, PassShape::decode(1, 8), Precision::dense(2), h200, unfused)
                   .kernel("qkv_proj"),
               InvalidArgument);
}

TEST(RooflinePass, EmptyPassOrChunkIsRefused) {
  const Device& h200 = find_device("h200");
  EXPECT_THROW(pass_cost(llama2_7b(), PassShape{}, Precision::dense(2), h200), InvalidArgument);
  EXPECT_THROW(pass_cost(llama2_7b(), PassShape{{{0, 0, true}}}, Precision::dense(2), h200),
               InvalidArgument);
  EXPECT_THROW(Precision::dense(1), InvalidArgument);
}

}  // namespace
}  // namespace nanoserve::roofline
