// Prefill attention v03 (FlashAttention-2 on the tensor cores) in fp16 and bf16: contiguous and
// paged varlen against oracle::attention on the same rounded q, K, V (tol::kFlashAttention*),
// paged against contiguous bit for bit (one kernel over two addressing policies), causal masks
// at the edges of the 64-row query tiles and 32-key K/V tiles, GQA 1, 2, 4, and the dispatch:
// version 0 runs v03 exactly where it can and v02 elsewhere. The suites are named *Wmma*, so
// ctest runs them once more under the simulator's permuted fragment mapping.
#include <cmath>
#include <algorithm>
#include <cstddef>
#include <functional>
#include <numeric>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "common/oracle/attention.h"
#include "common/tolerances.h"
#include "kernels/attention.h"
#include "kernels/device_buffer.h"
#include "kernels/paged_attention.h"
#include "tests/kernels/attention_test_support.h"
#include "tests/kernels/kernel_oracle_support.h"
#include "tests/kernels/kernel_test_support.h"
#include "tests/kernels/paged_test_support.h"

namespace nanoserve {
namespace {

using testing::random_values;
using testing::to_floats;
using testing::to_storage;

template <typename T>
Tolerance flash_tolerance() {
  return std::is_same<T, __half>::value ? tol::kFlashAttentionFp16 : tol::kFlashAttentionBf16;
}

// Contiguous prefill of queries at positions start .. start + n_queries - 1 in T (q and out),
// `version` on a cache made from `cache`.
template <typename T, typename A = T>
std::vector<float> run_contiguous(const std::vector<float>& q, const testing::HostKvCache<T>& cache,
                                  const AttentionHeads& heads, int n_queries, int start,
                                  int version) {
  DeviceBuffer<A> d_q(to_storage<A>(q)), d_out(q.size());
  DeviceBuffer<T> d_k(cache.k), d_v(cache.v);
  launch_attention_prefill<T, A>(d_q.get(), d_k.get(), d_v.get(), n_queries, start,
                                 cache.max_seq_len, heads, d_out.get(), nullptr, version);
  return to_floats(d_out.to_host());
}

// v03 and version 0 against the oracle; version 0 must be v03 bit for bit.
template <typename T>
void check_contiguous(const AttentionHeads& heads, int n_queries, int start) {
  const int kv_len = start + n_queries;
  const testing::HostKvCache<T> cache = testing::make_kv_cache<T>(
      61 + n_queries, {kv_len}, kv_len + 3, heads.n_kv_heads * heads.head_dim);
  // q rounded to T first: the oracle sees exactly what the kernel reads.
  const std::vector<float> q = to_floats(to_storage<T>(random_values(
      62, start, std::size_t(n_queries) * heads.n_heads * heads.head_dim, 1.0f)));
  std::vector<int> positions(n_queries);
  std::iota(positions.begin(), positions.end(), start);
  std::vector<float> want(q.size());
  oracle::attention(q.data(), positions.data(), n_queries, cache.rows(cache.k, 0, kv_len).data(),
                    cache.rows(cache.v, 0, kv_len).data(), kv_len, testing::oracle_shape(heads),
                    want.data());
  const std::string what = testing::describe(heads) + " n_queries=" + std::to_string(n_queries) +
                           " start=" + std::to_string(start);
  const std::vector<float> v03 = run_contiguous(q, cache, heads, n_queries, start, 3);
  testing::expect_close(v03, want, flash_tolerance<T>(), "v03 " + what);
  EXPECT_EQ(run_contiguous(q, cache, heads, n_queries, start, 0), v03) << "auto is v03, " << what;
}

template <typename T>
class FlashPrefillWmma : public testing::DeviceTest {};
using HalfTypes = ::testing::Types<__half, __nv_bfloat16>;
TYPED_TEST_SUITE(FlashPrefillWmma, HalfTypes, testing::StorageTypeNames);

TYPED_TEST(FlashPrefillWmma, AwkwardLengthsMatchTheOracle) {
  // Whole prompts of 1, 3, 17, 33 and 129 tokens, GQA 2 at head_dim 64: 129 x 2 rows are
  // four full 64-row tiles and one of 2 rows; 129 keys, four 32-key tiles and one key.
  for (int n : {1, 3, 17, 33, 129}) check_contiguous<TypeParam>({4, 2, 64}, n, 0);
}

TYPED_TEST(FlashPrefillWmma, GqaRatiosAndHeadWidths) {
  // GQA 1, 2, 4 at head widths 16 (TinyStories-656K: one fragment), 32, 64, 128.
  for (const AttentionHeads& heads : {AttentionHeads{2, 2, 16}, AttentionHeads{4, 2, 32},
                                      AttentionHeads{8, 2, 64}, AttentionHeads{4, 1, 128}}) {
    check_contiguous<TypeParam>(heads, 17, 0);
    check_contiguous<TypeParam>(heads, 5, 30);  // a chunk after a cached prefix
  }
}

TYPED_TEST(FlashPrefillWmma, CausalMaskAtTileEdges) {
  // Group 1: a 64-row tile is 64 positions. The diagonal at the last row of a tile (64), one
  // row into the next (65); chunks whose positions straddle the 32-key tile edges (31|32,
  // 32|33) and whose last key is the first or last of a tile.
  const AttentionHeads g1{2, 2, 32};
  check_contiguous<TypeParam>(g1, 64, 0);
  check_contiguous<TypeParam>(g1, 65, 0);
  check_contiguous<TypeParam>(g1, 2, 30);
  check_contiguous<TypeParam>(g1, 2, 31);
  check_contiguous<TypeParam>(g1, 1, 32);
  check_contiguous<TypeParam>(g1, 1, 63);
  // Group 4: 16 positions per tile, so a 17-token prompt has a tile of one position; the
  // warps of a tile (4 positions each) end before, at and after key-tile edges.
  check_contiguous<TypeParam>({8, 2, 16}, 17, 0);
  check_contiguous<TypeParam>({8, 2, 16}, 9, 28);
}

// Paged varlen prefill in T of a batch of (cached, fresh) sequences.
template <typename T>
std::vector<float> run_paged(const std::vector<float>& q, const std::vector<int>& cu, int max_q,
                             const testing::DevicePagedKv<T>& d, const AttentionHeads& heads,
                             int version) {
  DeviceBuffer<T> d_q(to_storage<T>(q)), d_out(q.size());
  DeviceBuffer<int> d_cu(cu);
  launch_paged_attention_prefill<T, T>(d_q.get(), d_cu.get(), cu.back(), max_q, d.kv,
                                       d.block_tables, heads, d_out.get(), nullptr, version);
  return to_floats(d_out.to_host());
}

struct Seq {
  int cached;
  int fresh;
};

template <typename T>
void check_paged(const AttentionHeads& heads, const std::vector<Seq>& seqs, int block_size) {
  std::vector<int> lens, q_lens, cu = {0};
  int max_q = 1;
  for (const Seq& s : seqs) {
    lens.push_back(s.cached + s.fresh);
    q_lens.push_back(s.fresh);
    cu.push_back(cu.back() + s.fresh);
    max_q = std::max(max_q, s.fresh);
  }
  const testing::HostPagedKv<T> p = testing::make_paged_kv<T>(
      71 + block_size, lens, block_size, heads.n_kv_heads * heads.head_dim);
  const testing::DevicePagedKv<T> d(p);
  const std::vector<float> q = to_floats(to_storage<T>(
      random_values(72, block_size, std::size_t(cu.back()) * heads.n_heads * heads.head_dim,
                    1.0f)));
  const std::string what =
      testing::describe(heads) + " " + testing::describe_batch(block_size, lens);
  const std::vector<float> got = run_paged(q, cu, max_q, d, heads, 3);
  testing::expect_close(got, testing::oracle_paged(q, p, q_lens, heads), flash_tolerance<T>(),
                        "paged v03 vs oracle, " + what);
  EXPECT_EQ(run_paged(q, cu, max_q, d, heads, 0), got) << "auto is v03, " << what;
  // The same kernel over contiguous addressing, sequence by sequence: the same bits.
  DeviceBuffer<T> d_k(p.contiguous.k), d_v(p.contiguous.v);
  DeviceBuffer<T> d_q(to_storage<T>(q)), d_out(q.size());
  const std::size_t q_row = std::size_t(heads.n_heads) * heads.head_dim;
  const std::size_t seq_rows = std::size_t(p.max_context()) * p.contiguous.kv_dim;
  for (std::size_t b = 0; b < seqs.size(); ++b) {
    launch_attention_prefill<T, T>(d_q.get() + cu[b] * q_row, d_k.get() + b * seq_rows,
                                   d_v.get() + b * seq_rows, q_lens[b], seqs[b].cached,
                                   p.max_context(), heads, d_out.get() + cu[b] * q_row, nullptr, 3);
  }
  EXPECT_EQ(to_floats(d_out.to_host()), got) << "paged vs contiguous v03, " << what;
}

template <typename T>
class FlashPagedPrefillWmma : public testing::DeviceTest {};
TYPED_TEST_SUITE(FlashPagedPrefillWmma, HalfTypes, testing::StorageTypeNames);

TYPED_TEST(FlashPagedPrefillWmma, MixedBatchMatchesOracleAndContiguous) {
  // A prompt, a prefix-cache hit of one block, a long chunk after two blocks, a decode row,
  // a hit ending inside a block, a one-token prompt and a sequence with nothing new; blocks of
  // 1 (every key its own gather) and 16, GQA 1, 2, 4.
  const std::vector<Seq> batch = {{0, 17}, {16, 5}, {32, 40}, {70, 1}, {7, 9}, {0, 1}, {10, 0}};
  check_paged<TypeParam>({4, 2, 64}, batch, 16);
  check_paged<TypeParam>({2, 2, 32}, batch, 1);
  check_paged<TypeParam>({8, 2, 128}, {{0, 33}, {40, 3}}, 16);
}

TEST(FlashPagedPrefillWmmaBadInput, BadBlockIdPoisonsOnlyItsSequence) {
  if (!testing::have_device()) GTEST_SKIP() << "no CUDA device on this machine";
  const AttentionHeads heads{4, 2, 16};
  const std::vector<int> lens = {23, 40, 10}, q_lens = {3, 10, 5}, cu = {0, 3, 13, 18};
  testing::HostPagedKv<__half> p = testing::make_paged_kv<__half>(7, lens, 16, 32);
  p.block_tables[1 * p.max_blocks_per_seq + 0] = -3;  // sequence 1's first block
  const testing::DevicePagedKv<__half> d(p);
  const std::size_t row = 4 * 16;
  const std::vector<float> q =
      to_floats(to_storage<__half>(random_values(8, 1, std::size_t(cu.back()) * row, 1.0f)));
  const std::vector<float> want = testing::oracle_paged(q, p, q_lens, heads);
  const std::vector<float> got = run_paged(q, cu, 10, d, heads, 3);
  for (std::size_t b : {0u, 2u}) {
    const std::size_t from = cu[b] * row, to = cu[b + 1] * row;
    testing::expect_close(std::vector<float>(got.begin() + from, got.begin() + to),
                          std::vector<float>(want.begin() + from, want.begin() + to),
                          tol::kFlashAttentionFp16, "sequence " + std::to_string(b));
  }
  for (std::size_t i = cu[1] * row; i < cu[2] * row; ++i) {
    ASSERT_TRUE(std::isnan(got[i])) << "sequence 1 value " << i;
  }
}

TEST(FlashPrefillDispatch, AutoVersionIsV03ForHalfTypesAndTensorCoreWidths) {
  using D = DType;
  EXPECT_EQ(attention_prefill_auto_version(D::kF16, D::kF16, 128), 3);
  EXPECT_EQ(attention_prefill_auto_version(D::kBF16, D::kBF16, 64), 3);
  EXPECT_EQ(attention_prefill_auto_version(D::kF16, D::kF16, 16), 3);   // TinyStories-656K
  EXPECT_EQ(attention_prefill_auto_version(D::kF16, D::kF16, 8), 2);    // stories260K
  EXPECT_EQ(attention_prefill_auto_version(D::kBF16, D::kBF16, 24), 2);  // not a multiple of 16
  EXPECT_EQ(attention_prefill_auto_version(D::kF16, D::kF16, 256), 2);   // past v03's registers
  EXPECT_EQ(attention_prefill_auto_version(D::kF32, D::kF32, 64), 2);    // the exact mode
  EXPECT_EQ(attention_prefill_auto_version(D::kF16, D::kBF16, 64), 2);   // mixed types
  EXPECT_EQ(attention_prefill_auto_version(D::kBF16, D::kF32, 64), 2);
}

// Version 0 against version `expected`, bit for bit, for KV type T and activations A.
template <typename T, typename A>
void expect_auto_runs(int expected, const AttentionHeads& heads) {
  const int n = 9, start = 4;
  const testing::HostKvCache<T> cache =
      testing::make_kv_cache<T>(5, {n + start}, n + start, heads.n_kv_heads * heads.head_dim);
  const std::vector<float> q =
      random_values(6, 0, std::size_t(n) * heads.n_heads * heads.head_dim, 1.0f);
  EXPECT_EQ((run_contiguous<T, A>(q, cache, heads, n, start, 0)),
            (run_contiguous<T, A>(q, cache, heads, n, start, expected)))
      << testing::describe(heads) << " expected v0" << expected;
}

TEST(FlashPrefillDispatch, VersionZeroFallsBackToV02WhereTensorCoresCannotRun) {
  if (!testing::have_device()) GTEST_SKIP() << "no CUDA device on this machine";
  expect_auto_runs<__half, __half>(2, {8, 4, 8});            // stories260K's heads
  expect_auto_runs<__half, __half>(3, {8, 8, 16});           // TinyStories-656K's heads
  expect_auto_runs<__nv_bfloat16, __nv_bfloat16>(2, {2, 1, 256});
  expect_auto_runs<__half, __nv_bfloat16>(2, {4, 2, 64});    // --kv-dtype differs
  expect_auto_runs<float, float>(2, {4, 2, 64});
}

TEST(FlashPrefillDispatch, RejectsVersion3WhereItCannotRun) {
  alignas(16) static __half pool[4];  // argument checks run before any launch
  const auto expect_refused = [](const std::function<void()>& run, const std::string& fragment) {
    try {
      run();
      ADD_FAILURE() << "expected std::invalid_argument mentioning " << fragment;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  expect_refused([] { launch_attention_prefill<float, float>(nullptr, nullptr, nullptr, 1, 0, 8,
                                                             {4, 2, 64}, nullptr, nullptr, 3); },
                 "fp32 KV and fp32 activations");
  expect_refused([] { launch_attention_prefill<__half, __half>(pool, pool, pool, 1, 0, 8,
                                                               {4, 2, 8}, pool, nullptr, 3); },
                 "head_dim = 8");
  expect_refused([] { launch_attention_prefill<__half, __half>(pool, pool, pool, 1, 0, 8,
                                                               {4, 2, 256}, pool, nullptr, 3); },
                 "head_dim = 256");
  EXPECT_THROW((launch_attention_prefill<__half, __half>(pool, pool, pool, 1, 0, 8, {4, 2, 64},
                                                         pool, nullptr, 4)),
               std::invalid_argument);
}

}  // namespace
}  // namespace nanoserve
