// Prefill attention, every version and storage type, against oracle::attention over the
// sequence's cache; rows past the last new position hold NaN.
#include <cstddef>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/oracle/attention.h"
#include "common/tolerances.h"
#include "kernels/attention.h"
#include "kernels/device_buffer.h"
#include "tests/kernels/attention_test_support.h"
#include "tests/kernels/kernel_oracle_support.h"
#include "tests/kernels/kernel_test_support.h"

namespace nanoserve {
namespace {

using testing::random_values;

// Queries at positions start .. start + n_queries - 1, every version against the oracle.
template <typename T>
void check_prefill(const AttentionHeads& heads, int n_queries, int start, int max_seq_len) {
  const int kv_len = start + n_queries;
  const int kv_dim = heads.n_kv_heads * heads.head_dim;
  const testing::HostKvCache<T> cache = testing::make_kv_cache<T>(19, {kv_len}, max_seq_len, kv_dim);
  const std::vector<float> q = random_values(
      20, heads.head_dim, std::size_t(n_queries) * heads.n_heads * heads.head_dim, 1.0f);
  std::vector<int> positions(n_queries);
  std::iota(positions.begin(), positions.end(), start);
  std::vector<float> want(q.size());
  oracle::attention(q.data(), positions.data(), n_queries, cache.rows(cache.k, 0, kv_len).data(),
                    cache.rows(cache.v, 0, kv_len).data(), kv_len, testing::oracle_shape(heads),
                    want.data());

  DeviceBuffer<float> d_q(q);
  DeviceBuffer<T> d_k(cache.k), d_v(cache.v);
  // fp32 activations: versions 0 (auto, here v02), 1 and 2; v03 takes only 16-bit q and KV
  // (test_attention_prefill_tc.cpp).
  for (int version = 0; version <= 2; ++version) {
    DeviceBuffer<float> d_out(q.size());
    launch_attention_prefill(d_q.get(), d_k.get(), d_v.get(), n_queries, start, max_seq_len,
                             heads, d_out.get(), nullptr, version);
    testing::expect_close(d_out.to_host(), want, tol::kKernelVsOracle,
                          "v" + std::to_string(version) + " " + testing::describe(heads) +
                              " n_queries=" + std::to_string(n_queries) +
                              " start=" + std::to_string(start));
  }
}

template <typename T>
class AttentionPrefillTyped : public testing::DeviceTest {};
TYPED_TEST_SUITE(AttentionPrefillTyped, testing::StorageTypes, testing::StorageTypeNames);

TYPED_TEST(AttentionPrefillTyped, EveryVersionMatchesTheOracleAcrossGqaRatios) {
  // A whole prompt of 17 (half a key tile past one; rows not a multiple of Br), GQA 1/2/4/8.
  for (const AttentionHeads& heads : {AttentionHeads{2, 2, 16}, AttentionHeads{4, 2, 8},
                                      AttentionHeads{8, 2, 64}, AttentionHeads{8, 1, 128}}) {
    check_prefill<TypeParam>(heads, 17, 0, 17);
  }
}

TYPED_TEST(AttentionPrefillTyped, ChunksThatStartMidSequence) {
  // Chunked prefill / multi-turn: new queries after 14, 250 and 255 cached positions, so the
  // contexts end at 15, 255 and 257 keys (around the 32-key tiles and 256).
  const AttentionHeads heads{4, 1, 16};
  check_prefill<TypeParam>(heads, 1, 14, 16);
  check_prefill<TypeParam>(heads, 5, 250, 260);
  check_prefill<TypeParam>(heads, 2, 255, 257);
}

TYPED_TEST(AttentionPrefillTyped, HandlesUnusualGroupsAndWidths) {
  // Group 3, head_dim 256 (v02's narrow-row variant), head_dim 24 (not a multiple of 32).
  check_prefill<TypeParam>({6, 2, 32}, 5, 3, 9);
  check_prefill<TypeParam>({2, 1, 256}, 3, 30, 40);
  check_prefill<TypeParam>({3, 1, 24}, 9, 0, 9);
}

using AttentionPrefill = testing::DeviceTest;

TEST_F(AttentionPrefill, OneQueryEqualsDecode) {
  // The same question asked two ways: prefill of the last position, decode of a sequence of
  // that length.
  const AttentionHeads heads{4, 2, 16};
  constexpr int kLen = 37;
  const testing::HostKvCache<float> cache = testing::make_kv_cache<float>(21, {kLen}, kLen, 32);
  const std::vector<float> q = random_values(22, 0, 4 * 16, 1.0f);
  DeviceBuffer<float> d_q(q), d_k(cache.k), d_v(cache.v), d_prefill(q.size()), d_decode(q.size());
  DeviceBuffer<int> d_lens(std::vector<int>{kLen});
  launch_attention_prefill(d_q.get(), d_k.get(), d_v.get(), 1, kLen - 1, kLen, heads,
                           d_prefill.get(), nullptr);
  launch_attention_decode(d_q.get(), d_k.get(), d_v.get(), d_lens.get(), 1, kLen, heads,
                          d_decode.get(), {}, nullptr);
  testing::expect_close(d_prefill.to_host(), d_decode.to_host(), tol::kKernelVsOracle,
                        "prefill vs decode");
}

TEST(AttentionPrefillArgs, RejectsBadArguments) {
  const auto prefill = [](int n_queries, int start, int max_seq_len, AttentionHeads heads,
                          int version) {
    launch_attention_prefill<float>(nullptr, nullptr, nullptr, n_queries, start, max_seq_len,
                                    heads, nullptr, nullptr, version);
  };
  const AttentionHeads ok{4, 2, 16};
  EXPECT_THROW(prefill(-1, 0, 8, ok, 0), std::invalid_argument);
  EXPECT_THROW(prefill(1, -1, 8, ok, 0), std::invalid_argument);
  EXPECT_THROW(prefill(4, 5, 8, ok, 0), std::invalid_argument);  // positions 5..8 > 7
  EXPECT_THROW(prefill(1, 0, 0, ok, 0), std::invalid_argument);
  EXPECT_THROW(prefill(1, 0, 8, {4, 3, 16}, 0), std::invalid_argument);
  EXPECT_THROW(prefill(1, 0, 8, {4, 2, 257}, 0), std::invalid_argument);
  EXPECT_THROW(prefill(1, 0, 8, ok, 3), std::invalid_argument);  // v03 needs 16-bit types
  EXPECT_THROW(prefill(1, 0, 8, ok, kAttentionPrefillVersions + 1), std::invalid_argument);
  EXPECT_THROW(prefill(1, 19999, 20000, ok, 1), std::invalid_argument);  // v01 shared memory
  EXPECT_NO_THROW(prefill(0, 8, 8, ok, 0));  // nothing new: nothing to do
}

}  // namespace
}  // namespace nanoserve
