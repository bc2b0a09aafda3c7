// Split-K of decode v02 chosen by the device's occupancy (attention_decode_split): the choice
// itself pinned on an H200-sized device (132 SMs) — no split for a short context or a long
// batch, a split that fills the SMs for a long context at batch 1 — and the launchers taking
// it: with a workspace and the default keys_per_split, the paged and contiguous kernels split
// (their workspace is written) exactly when the choice says so, and match the oracle in fp16
// and bf16 (q, KV and out in the same type, as the engine runs them).
#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/oracle/attention.h"
#include "kernels/attention.h"
#include "kernels/device_buffer.h"
#include "kernels/paged_attention.h"
#include "tests/kernels/activation_dtype_test_support.h"
#include "tests/kernels/kernel_oracle_support.h"
#include "tests/kernels/kernel_test_support.h"
#include "tests/kernels/paged_test_support.h"

namespace nanoserve {
namespace {

using testing::random_values;

constexpr int kH200Sms = 132;
const AttentionHeads kLlama3{32, 8, 128};  // Llama-3-8B: 8 KV heads, GQA 4

TEST(DecodeSplitChoice, ShortContextDoesNotSplit) {
  // One chunk of 256 keys holds the whole context: nothing to split, whatever the grid.
  for (int context : {1, 200, 256}) {
    const DecodeSplit s = attention_decode_split(kH200Sms, 1, 1, kLlama3, context);
    EXPECT_EQ(s.num_splits, 1) << "context " << context;
    EXPECT_EQ(s.keys_per_split, context);
  }
}

TEST(DecodeSplitChoice, LongContextAtBatchOneSplitsToFillTheDevice) {
  // 8 blocks (one per KV head) for a wave of 264: 32 chunks of 256 keys make 256 blocks, 97%
  // of the wave.
  const DecodeSplit s = attention_decode_split(kH200Sms, 1, 1, kLlama3, 8192);
  EXPECT_EQ(s.num_splits, 32);
  EXPECT_EQ(s.keys_per_split, 256);
}

TEST(DecodeSplitChoice, LongBatchDoesNotSplit) {
  // 64 x 8 = 512 blocks: already two waves. 16 x 8 = 128: half a wave, so two chunks.
  EXPECT_EQ(attention_decode_split(kH200Sms, 64, 1, kLlama3, 8192).num_splits, 1);
  EXPECT_EQ(attention_decode_split(kH200Sms, 27, 1, kLlama3, 8192).num_splits, 1);  // 216 >= 80%
  const DecodeSplit half_wave = attention_decode_split(kH200Sms, 16, 1, kLlama3, 8192);
  EXPECT_EQ(half_wave.num_splits, 2);
  EXPECT_EQ(half_wave.keys_per_split, 4096);
}

TEST(DecodeSplitChoice, FollowsTheSmCountNotAConstant) {
  // The same step on a 16-SM device: a wave of 32 is filled by 4 chunks of 2048 keys.
  const DecodeSplit small = attention_decode_split(16, 1, 1, kLlama3, 8192);
  EXPECT_EQ(small.num_splits, 4);
  EXPECT_EQ(small.keys_per_split, 2048);
  // One SM (the simulator's default): 8 blocks are a full wave already.
  EXPECT_EQ(attention_decode_split(1, 1, 1, kLlama3, 8192).num_splits, 1);
}

TEST(DecodeSplitChoice, RowsAndBlocksShapeTheChunks) {
  // Speculative verification, 5 queries x group 4 = 20 rows: 3 blocks per KV head.
  // At batch 4 that is 96 blocks; 5 chunks make 480, 91% of two waves (11 would fill four
  // exactly, but the smallest count within 85% of the best wins).
  const DecodeSplit verify = attention_decode_split(kH200Sms, 4, 5, kLlama3, 8192);
  EXPECT_EQ(verify.num_splits, 5);
  EXPECT_EQ(verify.keys_per_split, 7 * 256);
  // Paged blocks of 24 tokens: chunks are whole blocks (264 keys, not 256).
  const DecodeSplit paged = attention_decode_split(kH200Sms, 1, 1, kLlama3, 24 * 100, 24);
  EXPECT_EQ(paged.keys_per_split % 24, 0);
  EXPECT_EQ(paged.keys_per_split, 264);
  EXPECT_EQ(paged.num_splits, 10);
  // A workspace that holds 3 chunks caps the split.
  EXPECT_EQ(attention_decode_split(kH200Sms, 1, 1, kLlama3, 8192, 1, 3).num_splits, 3);
  EXPECT_THROW(attention_decode_split(0, 1, 1, kLlama3, 8192), std::invalid_argument);
  EXPECT_THROW(attention_decode_split(kH200Sms, 1, 1, {6, 4, 64}, 8192), std::invalid_argument);
}

// True when any workspace float changed from its NaN fill: the kernel wrote partials.
bool wrote_partials(const DeviceBuffer<float>& ws) {
  for (float x : ws.to_host()) {
    if (!std::isnan(x)) return true;
  }
  return false;
}

template <typename T>
class DecodeAutoSplit : public testing::DeviceTest {};
using HalfTypes = ::testing::Types<__half, __nv_bfloat16>;
TYPED_TEST_SUITE(DecodeAutoSplit, HalfTypes, testing::StorageTypeNames);

TYPED_TEST(DecodeAutoSplit, PagedSplitsWhenTheDeviceIsLargeAndMatchesTheOracle) {
  using T = TypeParam;
  const AttentionHeads heads{8, 2, 64};
  const std::vector<int> lens = {1100};  // batch 1: 2 blocks, 5 chunks of 256 on 132 SMs
  const testing::HostPagedKv<T> p = testing::make_paged_kv<T>(81, lens, 16, 2 * 64);
  const testing::DevicePagedKv<T> d(p);
  const std::vector<float> q = testing::rounded<T>(random_values(82, 0, 8 * 64, 1.0f));
  const std::vector<float> want = testing::oracle_paged(q, p, {1}, heads);
  const std::size_t floats = paged_attention_decode_workspace_floats(1, 1, 8, 64, p.max_context());
  ASSERT_GT(floats, 0u);
  for (int sms : {kH200Sms, 1}) {
    const bool split = attention_decode_split(sms, 1, 1, heads, p.max_context(), 16).num_splits > 1;
    EXPECT_EQ(split, sms == kH200Sms);
    DeviceBuffer<float> ws(std::vector<float>(floats, NAN));
    DeviceBuffer<T> d_q = testing::upload_as<T>(q), d_out(q.size());
    launch_paged_attention_decode<T, T>(d_q.get(), d.kv, d.block_tables, 1, heads, d_out.get(),
                                        {ws.get(), ws.size(), sms}, nullptr);
    EXPECT_EQ(wrote_partials(ws), split) << sms << " SMs";
    testing::expect_within(testing::download(d_out), want, testing::store_tolerance<T>(),
                           "paged auto split, " + std::to_string(sms) + " SMs");
  }
}

TYPED_TEST(DecodeAutoSplit, ContiguousSplitsWhenTheDeviceIsLargeAndMatchesTheOracle) {
  using T = TypeParam;
  // 2 KV heads: 2 blocks, a wave of 1 SM already (no split) but 3 chunks on 132 SMs.
  const AttentionHeads heads{4, 2, 64};
  const int len = 700, max_seq_len = 700;
  const testing::HostKvCache<T> cache = testing::make_kv_cache<T>(83, {len}, max_seq_len, 128);
  const std::vector<float> q = testing::rounded<T>(random_values(84, 0, 4 * 64, 1.0f));
  const int position = len - 1;
  std::vector<float> want(q.size());
  oracle::attention(q.data(), &position, 1, cache.rows(cache.k, 0, len).data(),
                    cache.rows(cache.v, 0, len).data(), len, testing::oracle_shape(heads),
                    want.data());
  DeviceBuffer<T> d_k(cache.k), d_v(cache.v);
  DeviceBuffer<int> d_lens(std::vector<int>{len});
  for (int sms : {kH200Sms, 1}) {
    DeviceBuffer<float> ws(
        std::vector<float>(attention_decode_workspace_floats(1, 4, 64, max_seq_len), NAN));
    DeviceBuffer<T> d_q = testing::upload_as<T>(q), d_out(q.size());
    launch_attention_decode<T, T>(d_q.get(), d_k.get(), d_v.get(), d_lens.get(), 1, max_seq_len,
                                  heads, d_out.get(), {ws.get(), ws.size(), sms}, nullptr);
    EXPECT_EQ(wrote_partials(ws), sms == kH200Sms) << sms << " SMs";
    testing::expect_within(testing::download(d_out), want, testing::store_tolerance<T>(),
                           "contiguous auto split, " + std::to_string(sms) + " SMs");
  }
}

TEST(DecodeAutoSplitArgs, AWorkspaceTooSmallForAnySplitRunsUnsplit) {
  if (!testing::have_device()) GTEST_SKIP() << "no CUDA device on this machine";
  // Room for one partial row only: the automatic choice falls back to one pass, where a fixed
  // keys_per_split would be refused.
  const AttentionHeads heads{4, 1, 64};
  const testing::HostKvCache<float> cache = testing::make_kv_cache<float>(85, {600}, 600, 64);
  DeviceBuffer<float> d_k(cache.k), d_v(cache.v), d_q(random_values(86, 0, 4 * 64, 1.0f));
  DeviceBuffer<float> d_auto(4 * 64), d_plain(4 * 64), ws(std::vector<float>(66 * 4, NAN));
  DeviceBuffer<int> d_lens(std::vector<int>{600});
  launch_attention_decode(d_q.get(), d_k.get(), d_v.get(), d_lens.get(), 1, 600, heads,
                          d_auto.get(), {ws.get(), ws.size(), kH200Sms}, nullptr);
  launch_attention_decode(d_q.get(), d_k.get(), d_v.get(), d_lens.get(), 1, 600, heads,
                          d_plain.get(), {}, nullptr);
  EXPECT_FALSE(wrote_partials(ws));
  EXPECT_EQ(d_auto.to_host(), d_plain.to_host());
  EXPECT_THROW(launch_attention_decode(d_q.get(), d_k.get(), d_v.get(), d_lens.get(), 1, 600,
                                       heads, d_auto.get(), {ws.get(), ws.size(), kH200Sms},
                                       nullptr, 2, kAttentionDecodeKeysPerSplit),
               std::invalid_argument);
}

}  // namespace
}  // namespace nanoserve
