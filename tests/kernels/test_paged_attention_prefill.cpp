// Batched variable-length paged prefill, every version, in fp32 and fp16: mixed batches of
// sequences with and without cached prefixes and a decode row, against oracle::attention on the
// logically ordered keys AND against contiguous prefill run per sequence on the same values,
// with physical blocks shuffled and every unowned slot NaN.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/tolerances.h"
#include "kernels/attention.h"
#include "kernels/device_buffer.h"
#include "kernels/paged_attention.h"
#include "tests/kernels/kernel_oracle_support.h"
#include "tests/kernels/kernel_test_support.h"
#include "tests/kernels/paged_test_support.h"

namespace nanoserve {
namespace {

using testing::random_values;

// One sequence of a step: tokens already in the cache, and new tokens (just appended).
struct Seq {
  int cached;
  int fresh;
};

// A prompt without cache, a prefix-cache hit of one block, a long chunk after two blocks, a
// decode row deep in its context, a hit that ends inside a block, a one-token prompt, and a
// sequence with no new token this step (nothing to compute, nothing written).
const std::vector<Seq> kMixedBatch = {{0, 17}, {16, 5}, {32, 40}, {255, 1},
                                      {7, 9},  {0, 1},  {10, 0}};

struct Batch {
  std::vector<int> lens;        // (batch) context lengths: cached + fresh
  std::vector<int> q_lens;      // (batch) fresh
  std::vector<int> cu_seqlens;  // (batch + 1)
  int max_q_len = 1;
};

Batch make_batch(const std::vector<Seq>& seqs) {
  Batch b;
  b.cu_seqlens = {0};
  for (const Seq& s : seqs) {
    b.lens.push_back(s.cached + s.fresh);
    b.q_lens.push_back(s.fresh);
    b.cu_seqlens.push_back(b.cu_seqlens.back() + s.fresh);
    b.max_q_len = std::max(b.max_q_len, s.fresh);
  }
  return b;
}

template <typename T>
std::vector<float> run_paged(const std::vector<float>& q, const Batch& batch,
                             const testing::DevicePagedKv<T>& d, const AttentionHeads& heads,
                             int version) {
  DeviceBuffer<float> d_q(q), d_out(q.size());
  DeviceBuffer<int> d_cu(batch.cu_seqlens);
  launch_paged_attention_prefill(d_q.get(), d_cu.get(), batch.cu_seqlens.back(), batch.max_q_len,
                                 d.kv, d.block_tables, heads, d_out.get(), nullptr, version);
  return d_out.to_host();
}

// Contiguous prefill (chapter 1), one launch per sequence, on the same values.
template <typename T>
std::vector<float> run_contiguous(const std::vector<float>& q, const Batch& batch,
                                  const testing::HostPagedKv<T>& p, const AttentionHeads& heads) {
  DeviceBuffer<T> d_k(p.contiguous.k), d_v(p.contiguous.v);
  DeviceBuffer<float> d_q(q), d_out(q.size());
  const std::size_t q_row = std::size_t(heads.n_heads) * heads.head_dim;
  const std::size_t seq_rows = std::size_t(p.max_context()) * p.contiguous.kv_dim;
  for (std::size_t b = 0; b < batch.lens.size(); ++b) {
    const std::size_t first = std::size_t(batch.cu_seqlens[b]) * q_row;
    launch_attention_prefill(d_q.get() + first, d_k.get() + b * seq_rows, d_v.get() + b * seq_rows,
                             batch.q_lens[b], batch.lens[b] - batch.q_lens[b], p.max_context(),
                             heads, d_out.get() + first, nullptr);
  }
  return d_out.to_host();
}

template <typename T>
void check_paged_prefill(const AttentionHeads& heads, const std::vector<Seq>& seqs,
                         int block_size) {
  const Batch batch = make_batch(seqs);
  const testing::HostPagedKv<T> p = testing::make_paged_kv<T>(
      41 + block_size, batch.lens, block_size, heads.n_kv_heads * heads.head_dim);
  const testing::DevicePagedKv<T> d(p);
  const std::vector<float> q =
      random_values(42, heads.head_dim,
                    std::size_t(batch.cu_seqlens.back()) * heads.n_heads * heads.head_dim, 1.0f);
  const std::string what =
      testing::describe(heads) + " " + testing::describe_batch(block_size, batch.lens);
  const std::vector<float> want = testing::oracle_paged(q, p, batch.q_lens, heads);
  const std::vector<float> contiguous = run_contiguous(q, batch, p, heads);
  // fp32 activations: versions 0 (auto, here v02), 1 and 2; v03 takes only 16-bit q and KV
  // (test_attention_prefill_tc.cpp).
  for (int version = 0; version <= 2; ++version) {
    const std::vector<float> got = run_paged(q, batch, d, heads, version);
    const std::string name = "v" + std::to_string(version);
    testing::expect_close(got, want, tol::kKernelVsOracle, name + " vs oracle, " + what);
    testing::expect_close(got, contiguous, tol::kKernelVsOracle, name + " vs contiguous, " + what);
  }
}

using SweepTypes = ::testing::Types<float, __half>;

template <typename T>
class PagedPrefillTyped : public testing::DeviceTest {};
TYPED_TEST_SUITE(PagedPrefillTyped, SweepTypes, testing::StorageTypeNames);

TYPED_TEST(PagedPrefillTyped, MixedBatchMatchesOracleAndContiguous) {
  for (int block_size : {1, 16, 32}) {
    check_paged_prefill<TypeParam>({4, 2, 16}, kMixedBatch, block_size);
  }
}

TYPED_TEST(PagedPrefillTyped, NewTokensAroundBlockBoundaries) {
  // Contexts of 1, 15, 16, 17, 255, 256, 257 tokens, the last few of each new: prefixes end
  // just before, at and after block edges, and new tokens straddle them.
  check_paged_prefill<TypeParam>(
      {4, 2, 16}, {{0, 1}, {10, 5}, {0, 16}, {15, 2}, {250, 5}, {240, 16}, {254, 3}}, 16);
}

TYPED_TEST(PagedPrefillTyped, MatchesAcrossGqaRatiosAndHeadWidths) {
  // GQA ratios 1, 2, 4, 8 with head widths 8, 64, 128, 64; and 256 (the Br = 8 tiling).
  const std::vector<Seq> seqs = {{0, 9}, {16, 4}, {33, 1}};
  for (const AttentionHeads& heads :
       {AttentionHeads{4, 4, 8}, AttentionHeads{4, 2, 64}, AttentionHeads{8, 2, 128},
        AttentionHeads{8, 1, 64}, AttentionHeads{2, 1, 256}}) {
    check_paged_prefill<TypeParam>(heads, seqs, 16);
  }
}

TEST(PagedPrefill, Bf16MixedBatchMatchesOracleAndContiguous) {
  if (!testing::have_device()) GTEST_SKIP() << "no CUDA device on this machine";
  check_paged_prefill<__nv_bfloat16>({4, 1, 64}, kMixedBatch, 16);
}

TEST(PagedPrefill, AgreesWithMultiQueryDecodeOnVerificationRows) {
  if (!testing::have_device()) GTEST_SKIP() << "no CUDA device on this machine";
  // Speculative verification can run through either kernel: 4 new tokens per sequence.
  const AttentionHeads heads{8, 2, 32};
  const Batch batch = make_batch({{12, 4}, {60, 4}, {0, 4}});
  const testing::HostPagedKv<float> p = testing::make_paged_kv<float>(3, batch.lens, 16, 64);
  const testing::DevicePagedKv<float> d(p);
  const std::vector<float> q = random_values(4, 1, 3 * 4 * 8 * 32, 1.0f);
  DeviceBuffer<float> d_q(q), d_out(q.size());
  launch_paged_attention_decode(d_q.get(), d.kv, d.block_tables, 4, heads, d_out.get(), {},
                                nullptr);
  for (int version = 1; version <= 2; ++version) {  // fp32 q: the CUDA-core versions
    testing::expect_close(run_paged(q, batch, d, heads, version), d_out.to_host(),
                          tol::kKernelVsOracle,
                          "prefill v" + std::to_string(version) + " vs decode");
  }
}

TEST(PagedPrefill, BadBlockIdPoisonsOnlyItsSequence) {
  if (!testing::have_device()) GTEST_SKIP() << "no CUDA device on this machine";
  const AttentionHeads heads{4, 2, 16};
  const Batch batch = make_batch({{20, 3}, {30, 10}, {5, 5}});
  testing::HostPagedKv<float> p = testing::make_paged_kv<float>(7, batch.lens, 16, 32);
  p.block_tables[1 * p.max_blocks_per_seq + 0] = -3;  // sequence 1's first block
  const testing::DevicePagedKv<float> d(p);
  const std::size_t row = 4 * 16;
  const std::vector<float> q =
      random_values(8, 1, std::size_t(batch.cu_seqlens.back()) * row, 1.0f);
  const std::vector<float> want = testing::oracle_paged(q, p, batch.q_lens, heads);
  for (int version = 1; version <= 2; ++version) {  // fp32 q: the CUDA-core versions
    const std::string name = "v" + std::to_string(version);
    const std::vector<float> got = run_paged(q, batch, d, heads, version);
    for (std::size_t b : {0u, 2u}) {
      const std::size_t from = batch.cu_seqlens[b] * row, to = batch.cu_seqlens[b + 1] * row;
      testing::expect_close(std::vector<float>(got.begin() + from, got.begin() + to),
                            std::vector<float>(want.begin() + from, want.begin() + to),
                            tol::kKernelVsOracle, name + " sequence " + std::to_string(b));
    }
    for (std::size_t i = batch.cu_seqlens[1] * row; i < batch.cu_seqlens[2] * row; ++i) {
      ASSERT_TRUE(std::isnan(got[i])) << name << " sequence 1 value " << i;
    }
  }
}

TEST(PagedPrefillArgs, RejectsBadArguments) {
  alignas(16) static float pool[4];  // argument checks run before any launch
  const auto prefill = [](PagedKVView<float> kv, DeviceBlockTables t, int total_q, int max_q_len,
                          AttentionHeads heads, int version) {
    launch_paged_attention_prefill<float>(nullptr, nullptr, total_q, max_q_len, kv, t, heads,
                                          nullptr, nullptr, version);
  };
  const PagedKVView<float> kv{pool, pool, 8, 16};
  const DeviceBlockTables t{nullptr, nullptr, 2, 4};
  const AttentionHeads ok{4, 2, 16};
  EXPECT_THROW(prefill({pool, pool, 0, 16}, t, 4, 4, ok, 0), std::invalid_argument);
  EXPECT_THROW(prefill({pool, pool, 8, 0}, t, 4, 4, ok, 0), std::invalid_argument);
  EXPECT_THROW(prefill(kv, {nullptr, nullptr, 70000, 4}, 4, 4, ok, 0), std::invalid_argument);
  EXPECT_THROW(prefill(kv, {nullptr, nullptr, 2, 0}, 4, 4, ok, 0), std::invalid_argument);
  EXPECT_THROW(prefill(kv, t, -1, 4, ok, 0), std::invalid_argument);
  EXPECT_THROW(prefill(kv, t, 4, 0, ok, 0), std::invalid_argument);
  EXPECT_THROW(prefill(kv, t, 4, 4, {6, 4, 16}, 0), std::invalid_argument);
  EXPECT_THROW(prefill(kv, t, 4, 4, {4, 2, 0}, 0), std::invalid_argument);
  EXPECT_THROW(prefill(kv, t, 4, 4, ok, kPagedPrefillVersions + 1), std::invalid_argument);
  // v01 keeps every score in shared memory: 16 * 1000 keys do not fit in 48 KiB.
  EXPECT_THROW(prefill(kv, {nullptr, nullptr, 2, 1000}, 4, 4, ok, 1), std::invalid_argument);
  EXPECT_NO_THROW(prefill(kv, t, 0, 4, ok, 0));                         // no new token
  EXPECT_NO_THROW(prefill(kv, {nullptr, nullptr, 0, 4}, 4, 4, ok, 0));  // empty batch
}

}  // namespace
}  // namespace nanoserve
