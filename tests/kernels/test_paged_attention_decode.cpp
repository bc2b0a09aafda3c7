// Paged decode attention, every version (and v02 with and without split-K) in fp32 and fp16,
// against oracle::attention on the logically ordered keys AND against the contiguous kernels
// of chapter 1 on the same values, with physical blocks shuffled and every unowned slot NaN.
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

// How a run is configured: version, and for v02 whether it splits and into which partitions.
struct DecodeRun {
  int version;
  bool split;
  int keys_per_split;
  std::string name() const {
    return "v" + std::to_string(version) +
           (split ? " split " + std::to_string(keys_per_split) : "");
  }
};

// v01; v02 in one pass; v02 split into the default partitions and into partitions of 32 keys
// (one or two blocks at block sizes 32 and 16: partition edges inside the awkward lengths).
const std::vector<DecodeRun> kRuns = {{1, false, kPagedDecodeKeysPerSplit},
                                      {2, false, kPagedDecodeKeysPerSplit},
                                      {2, true, kPagedDecodeKeysPerSplit},
                                      {2, true, 32}};

// Runs the paged kernel with `run` on (q, p) and returns its output.
template <typename T>
std::vector<float> run_paged(const DecodeRun& run, const std::vector<float>& q,
                             const testing::DevicePagedKv<T>& d, const testing::HostPagedKv<T>& p,
                             int q_len, const AttentionHeads& heads) {
  const int batch = int(p.context_lens.size());
  DeviceBuffer<float> d_q(q), d_out(q.size());
  DeviceBuffer<float> d_ws(paged_attention_decode_workspace_floats(
      batch, q_len, heads.n_heads, heads.head_dim, p.max_context(), run.keys_per_split));
  DecodeWorkspace ws;
  if (run.split) ws = {d_ws.get(), d_ws.size()};
  launch_paged_attention_decode(d_q.get(), d.kv, d.block_tables, q_len, heads, d_out.get(), ws,
                                nullptr, run.version, run.keys_per_split);
  return d_out.to_host();
}

// The contiguous kernels on the same values: decode (v02, split) for q_len 1, otherwise
// prefill of the q_len positions of each sequence (they are its last q_len tokens).
template <typename T>
std::vector<float> run_contiguous(const std::vector<float>& q, const testing::HostPagedKv<T>& p,
                                  int q_len, const AttentionHeads& heads) {
  const int batch = int(p.context_lens.size());
  DeviceBuffer<T> d_k(p.contiguous.k), d_v(p.contiguous.v);
  DeviceBuffer<float> d_q(q), d_out(q.size());
  if (q_len == 1) {
    DeviceBuffer<int> d_lens(p.context_lens);
    DeviceBuffer<float> d_ws(
        attention_decode_workspace_floats(batch, heads.n_heads, heads.head_dim, p.max_context()));
    launch_attention_decode(d_q.get(), d_k.get(), d_v.get(), d_lens.get(), batch, p.max_context(),
                            heads, d_out.get(), {d_ws.get(), d_ws.size()}, nullptr);
    return d_out.to_host();
  }
  const std::size_t q_rows = std::size_t(q_len) * heads.n_heads * heads.head_dim;
  const std::size_t seq_rows = std::size_t(p.max_context()) * p.contiguous.kv_dim;
  for (int b = 0; b < batch; ++b) {
    launch_attention_prefill(d_q.get() + b * q_rows, d_k.get() + b * seq_rows,
                             d_v.get() + b * seq_rows, q_len, p.context_lens[b] - q_len,
                             p.max_context(), heads, d_out.get() + b * q_rows, nullptr);
  }
  return d_out.to_host();
}

// Every run on `p` against the oracle, and (when `vs_contiguous`: every context >= q_len and
// within reach) against the contiguous kernels.
template <typename T>
void check_paged_decode(const AttentionHeads& heads, const testing::HostPagedKv<T>& p, int q_len,
                        const std::vector<DecodeRun>& runs, bool vs_contiguous = true) {
  const std::vector<int>& lens = p.context_lens;
  const int batch = int(lens.size()), block_size = p.block_size;
  const testing::DevicePagedKv<T> d(p);
  const std::vector<float> q =
      random_values(32, q_len, std::size_t(batch) * q_len * heads.n_heads * heads.head_dim, 1.0f);
  const std::vector<float> want =
      testing::oracle_paged(q, p, std::vector<int>(lens.size(), q_len), heads);
  const std::string what = testing::describe(heads) + " " +
                           testing::describe_batch(block_size, lens) +
                           " q_len=" + std::to_string(q_len);
  std::vector<float> contiguous;
  if (vs_contiguous) contiguous = run_contiguous(q, p, q_len, heads);
  for (const DecodeRun& run : runs) {
    // Partitions must be whole blocks; and a single partition is the unsplit run again.
    if (run.split &&
        (run.keys_per_split % block_size != 0 ||
         paged_attention_decode_workspace_floats(batch, q_len, heads.n_heads, heads.head_dim,
                                                 p.max_context(), run.keys_per_split) == 0)) {
      continue;
    }
    const std::vector<float> got = run_paged(run, q, d, p, q_len, heads);
    testing::expect_close(got, want, tol::kKernelVsOracle, run.name() + " vs oracle, " + what);
    if (vs_contiguous) {
      testing::expect_close(got, contiguous, tol::kKernelVsOracle,
                            run.name() + " vs contiguous, " + what);
    }
  }
}

// The same on a fresh shuffled pool for `lens` in blocks of `block_size`.
template <typename T>
void check_paged_decode(const AttentionHeads& heads, const std::vector<int>& lens, int block_size,
                        int q_len, const std::vector<DecodeRun>& runs, bool vs_contiguous = true) {
  check_paged_decode<T>(heads,
                        testing::make_paged_kv<T>(31 + block_size, lens, block_size,
                                                  heads.n_kv_heads * heads.head_dim),
                        q_len, runs, vs_contiguous);
}

// fp32 and fp16 for the sweeps (bf16 shares fp16's 16-bit path: one test below).
using SweepTypes = ::testing::Types<float, __half>;

template <typename T>
class PagedDecodeTyped : public testing::DeviceTest {};
TYPED_TEST_SUITE(PagedDecodeTyped, SweepTypes, testing::StorageTypeNames);

TYPED_TEST(PagedDecodeTyped, MatchesOracleAndContiguousAroundBlockBoundaries) {
  // Lengths at and around block edges of 16 and 32 and around 256 (the default partition),
  // for block sizes 1 (every key its own block), 16 and 32.
  for (int block_size : {1, 16, 32}) {
    check_paged_decode<TypeParam>({4, 2, 16}, {1, 15, 16, 17, 255, 256, 257}, block_size, 1, kRuns);
  }
}

TYPED_TEST(PagedDecodeTyped, SplitKMergesLongContexts) {
  // Long contexts: 3-5 partitions of 256 keys, 20-35 of 32; a short sequence alongside.
  check_paged_decode<TypeParam>({4, 1, 64}, {1100, 1, 600}, 16, 1, kRuns);
}

TYPED_TEST(PagedDecodeTyped, MatchesAcrossGqaRatiosAndHeadWidths) {
  // GQA ratios 1, 2, 4, 8 with head widths 8, 64, 128, 64.
  for (const AttentionHeads& heads : {AttentionHeads{4, 4, 8}, AttentionHeads{4, 2, 64},
                                      AttentionHeads{8, 2, 128}, AttentionHeads{8, 1, 64}}) {
    check_paged_decode<TypeParam>(heads, {1, 17, 40}, 16, 1, kRuns);
  }
}

TYPED_TEST(PagedDecodeTyped, SeveralQueriesPerSequenceAreCausalAmongThemselves) {
  // Speculative verification: q_len 2..5 positions at the end of each sequence, straddling
  // block (16) and partition (32) edges. Group 2 gives 4-10 rows per KV head (one or two row
  // chunks of 8), group 8 with q_len 5 gives 40 (five chunks).
  for (int q_len = 2; q_len <= 5; ++q_len) {
    check_paged_decode<TypeParam>({4, 2, 16}, {5, 17, 34}, 16, q_len, kRuns);
  }
  check_paged_decode<TypeParam>({8, 1, 32}, {5, 70}, 32, 5, kRuns);
}

TEST(PagedDecode, Bf16MatchesOracleAndContiguous) {
  if (!testing::have_device()) GTEST_SKIP() << "no CUDA device on this machine";
  check_paged_decode<__nv_bfloat16>({4, 1, 64}, {1, 16, 17, 300}, 16, 1, kRuns);
  check_paged_decode<__nv_bfloat16>({4, 1, 64}, {3, 16, 17}, 16, 3, kRuns);
}

TEST(PagedDecode, ShortClampedAndEmptyContextsFollowTheContract) {
  if (!testing::have_device()) GTEST_SKIP() << "no CUDA device on this machine";
  // q_len 3: length 2 leaves query 0 at position -1 (zeros); 0 and -4: all zeros. Sequence 2
  // fills its whole table row (2 blocks of 8, no spare entry) and claims 99 tokens: clamped to
  // the 16 its row reaches. The contiguous kernels have no such contract to compare with.
  const AttentionHeads heads{4, 2, 16};
  for (int q_len : {1, 3}) {
    testing::HostPagedKv<float> p =
        testing::make_paged_kv<float>(8, {2, 0, 16, -4}, 8, 32, /*spare_blocks=*/3,
                                      /*spare_entries=*/0);
    p.context_lens[2] = 99;
    check_paged_decode<float>(heads, p, q_len, kRuns, false);
  }
}

TEST(PagedDecode, BadBlockIdPoisonsOnlyItsSequence) {
  if (!testing::have_device()) GTEST_SKIP() << "no CUDA device on this machine";
  // Sequence 1's second block id points past the pool: its output must be NaN (not a read
  // outside the pool — ASan checks that in the sanitizer build), the others exact.
  const AttentionHeads heads{4, 2, 16};
  const std::vector<int> lens = {20, 40, 33};
  testing::HostPagedKv<float> p = testing::make_paged_kv<float>(5, lens, 16, 32);
  p.block_tables[1 * p.max_blocks_per_seq + 1] = p.num_blocks + 7;
  const testing::DevicePagedKv<float> d(p);
  const std::vector<float> q = random_values(6, 1, lens.size() * 4 * 16, 1.0f);
  const std::vector<float> want = testing::oracle_paged(q, p, {1, 1, 1}, heads);
  const std::size_t row = 4 * 16;
  for (const DecodeRun& run : kRuns) {
    const std::vector<float> got = run_paged(run, q, d, p, 1, heads);
    for (std::size_t b : {0u, 2u}) {
      testing::expect_close(
          std::vector<float>(got.begin() + b * row, got.begin() + (b + 1) * row),
          std::vector<float>(want.begin() + b * row, want.begin() + (b + 1) * row),
          tol::kKernelVsOracle, run.name() + " sequence " + std::to_string(b));
    }
    for (std::size_t i = row; i < 2 * row; ++i) {
      ASSERT_TRUE(std::isnan(got[i])) << run.name() << " sequence 1 value " << i - row;
    }
  }
}

TEST(PagedDecodeArgs, WorkspaceSizeCoversEveryPartition) {
  // 600 keys in partitions of 256: 3; per (sequence, query, head, partition) head_dim + 2.
  EXPECT_EQ(paged_attention_decode_workspace_floats(2, 3, 4, 8, 600, 256),
            std::size_t(2 * 3 * 4 * 3 * 10));
  EXPECT_EQ(paged_attention_decode_workspace_floats(2, 1, 4, 8, 256, 256), 0u);
  EXPECT_THROW(paged_attention_decode_workspace_floats(2, 1, 4, 8, 600, 0), std::invalid_argument);
}

TEST(PagedDecodeArgs, RejectsBadArguments) {
  alignas(16) static float pool[4];  // argument checks run before any launch
  const auto decode = [](PagedKVView<float> kv, DeviceBlockTables t, int q_len,
                         AttentionHeads heads, DecodeWorkspace ws, int version,
                         int keys_per_split) {
    launch_paged_attention_decode<float>(nullptr, kv, t, q_len, heads, nullptr, ws, nullptr,
                                         version, keys_per_split);
  };
  const PagedKVView<float> kv{pool, pool, 8, 16};
  const DeviceBlockTables t{nullptr, nullptr, 2, 4};
  const AttentionHeads ok{4, 2, 16};
  float small_ws[8];
  EXPECT_THROW(decode({pool, pool, 0, 16}, t, 1, ok, {}, 0, 256), std::invalid_argument);
  EXPECT_THROW(decode({pool, pool, 8, 0}, t, 1, ok, {}, 0, 256), std::invalid_argument);
  EXPECT_THROW(decode({pool, pool, 8, 4097}, t, 1, ok, {}, 0, 256), std::invalid_argument);
  EXPECT_THROW(decode(kv, {nullptr, nullptr, -1, 4}, 1, ok, {}, 0, 256), std::invalid_argument);
  EXPECT_THROW(decode(kv, {nullptr, nullptr, 65536, 4}, 1, ok, {}, 0, 256), std::invalid_argument);
  EXPECT_THROW(decode(kv, {nullptr, nullptr, 2, 0}, 1, ok, {}, 0, 256), std::invalid_argument);
  EXPECT_THROW(decode(kv, {nullptr, nullptr, 2, 1 << 27}, 1, ok, {}, 0, 256),
               std::invalid_argument);  // 2^31 keys per sequence
  EXPECT_THROW(decode(kv, t, 0, ok, {}, 0, 256), std::invalid_argument);
  EXPECT_THROW(decode(kv, t, 65, ok, {}, 0, 256), std::invalid_argument);
  EXPECT_THROW(decode(kv, t, 1, {6, 4, 16}, {}, 0, 256), std::invalid_argument);
  EXPECT_THROW(decode(kv, t, 1, {4, 2, 260}, {}, 0, 256), std::invalid_argument);
  EXPECT_THROW(decode(kv, t, 1, ok, {}, 3, 256), std::invalid_argument);
  // A partition that is not a whole number of 16-token blocks; a too small workspace.
  EXPECT_THROW(decode(kv, {nullptr, nullptr, 2, 40}, 1, ok, {small_ws, 8}, 2, 24),
               std::invalid_argument);
  EXPECT_THROW(decode(kv, {nullptr, nullptr, 2, 40}, 1, ok, {small_ws, 8}, 2, 256),
               std::invalid_argument);
  // v01 keeps every score in shared memory: 16 * 1000 keys do not fit in 48 KiB.
  EXPECT_THROW(decode(kv, {nullptr, nullptr, 2, 1000}, 1, ok, {}, 1, 256), std::invalid_argument);
  // v02 needs 16-byte rows: head_dim 12 in fp32 is 48 bytes (fine), in fp16 24 (not).
  alignas(16) static __half half_pool[8];
  EXPECT_THROW(launch_paged_attention_decode<__half>(nullptr, {half_pool, half_pool, 8, 16}, t, 1,
                                                     {2, 1, 12}, nullptr, {}, nullptr, 2),
               std::invalid_argument);
  EXPECT_NO_THROW(decode(kv, {nullptr, nullptr, 0, 4}, 1, ok, {}, 0, 256));  // empty batch
}

TEST(PagedDecode, AutoVersionFallsBackToV01ForWidthsV02CannotLoad) {
  if (!testing::have_device()) GTEST_SKIP() << "no CUDA device on this machine";
  // head_dim 12 fp16: 24-byte rows, no 16-byte vectors; auto must pick v01 and be right.
  check_paged_decode<__half>({2, 1, 12}, {3, 9, 17}, 4, 2, {{0, true, 8}});
}

}  // namespace
}  // namespace nanoserve
